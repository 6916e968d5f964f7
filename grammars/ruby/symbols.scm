(method name: (_) @name.definition.method) @definition.method
(singleton_method name: (_) @name.definition.method) @definition.method
(class name: [(constant) (scope_resolution)] @name.definition.class) @definition.class
(module name: [(constant) (scope_resolution)] @name.definition.module) @definition.module
(assignment left: (constant) @name.definition.constant) @definition.constant
(call method: (identifier) @_attr arguments: (argument_list (simple_symbol) @name.definition.field) (#match? @_attr "^attr_")) @definition.field
(call method: (identifier) @name.reference.call) @reference.call
(call receiver: (constant) @name.reference.module) @reference.module
(call method: (identifier) @_req arguments: (argument_list (string (string_content) @import.module)) (#match? @_req "^require")) @import
