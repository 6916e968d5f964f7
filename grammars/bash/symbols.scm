(function_definition name: (word) @name.definition.function) @definition.function
(program (variable_assignment name: (variable_name) @name.definition.constant) @definition.constant)
(command name: (command_name (word) @name.reference.call)) @reference.call
(command name: (command_name (word) @_src) argument: (word) @import.module (#any-of? @_src "source" ".")) @import
