(function_declaration name: (identifier) @name.definition.function) @definition.function
(method_declaration name: (field_identifier) @name.definition.method) @definition.method
(type_declaration (type_spec name: (type_identifier) @name.definition.type)) @definition.type
(field_declaration name: (field_identifier) @name.definition.field) @definition.field
(method_elem name: (field_identifier) @name.definition.method) @definition.method
(source_file (const_declaration (const_spec name: (identifier) @name.definition.constant)) @definition.constant)
(source_file (var_declaration (var_spec name: (identifier) @name.definition.constant)) @definition.constant)
(call_expression function: [(identifier) @name.reference.call (selector_expression field: (field_identifier) @name.reference.call)]) @reference.call
(type_identifier) @name.reference.type
(selector_expression operand: (identifier) @name.reference.module) @reference.module
(import_spec path: (interpreted_string_literal) @import.module) @import
