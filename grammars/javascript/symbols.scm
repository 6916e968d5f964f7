(function_declaration name: (identifier) @name.definition.function) @definition.function
(generator_function_declaration name: (identifier) @name.definition.function) @definition.function
(class_declaration name: (identifier) @name.definition.class) @definition.class
(method_definition name: (property_identifier) @name.definition.method) @definition.method
(field_definition property: (property_identifier) @name.definition.field) @definition.field
(program (lexical_declaration (variable_declarator name: (identifier) @name.definition.function value: [(arrow_function) (function_expression)])) @definition.function)
(program (export_statement (lexical_declaration (variable_declarator name: (identifier) @name.definition.function value: [(arrow_function) (function_expression)])) @definition.function))
(program (lexical_declaration (variable_declarator name: (identifier) @name.definition.constant value: [(number) (string) (object) (array) (new_expression) (call_expression) (identifier) (member_expression)])) @definition.constant)
(call_expression function: [(identifier) @name.reference.call (member_expression property: (property_identifier) @name.reference.call)]) @reference.call
(new_expression constructor: (identifier) @name.reference.class) @reference.class
(member_expression object: (identifier) @name.reference.module) @reference.module
(import_statement source: (string (string_fragment) @import.module)) @import
(import_specifier name: (identifier) @import.name)
(call_expression function: (identifier) @_req arguments: (arguments (string (string_fragment) @import.module)) (#eq? @_req "require")) @import
