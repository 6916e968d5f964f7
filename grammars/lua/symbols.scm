(function_declaration name: (identifier) @name.definition.function) @definition.function
(function_declaration name: (dot_index_expression field: (identifier) @name.definition.function)) @definition.function
(function_declaration name: (method_index_expression method: (identifier) @name.definition.method)) @definition.method
(chunk (variable_declaration (assignment_statement (variable_list name: (identifier) @name.definition.constant))) @definition.constant)
(function_call name: [(identifier) @name.reference.call (dot_index_expression field: (identifier) @name.reference.call) (method_index_expression method: (identifier) @name.reference.call)]) @reference.call
(dot_index_expression table: (identifier) @name.reference.module) @reference.module
(function_call name: (identifier) @_req arguments: (arguments (string content: (string_content) @import.module)) (#eq? @_req "require")) @import
