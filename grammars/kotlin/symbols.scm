(function_declaration (simple_identifier) @name.definition.function) @definition.function
(class_declaration (type_identifier) @name.definition.class) @definition.class
(object_declaration (type_identifier) @name.definition.class) @definition.class
(class_body (property_declaration (variable_declaration (simple_identifier) @name.definition.field)) @definition.field)
(source_file (property_declaration (variable_declaration (simple_identifier) @name.definition.constant)) @definition.constant)
(call_expression (simple_identifier) @name.reference.call) @reference.call
(call_expression (navigation_expression (navigation_suffix (simple_identifier) @name.reference.call))) @reference.call
(user_type (type_identifier) @name.reference.type) @reference.type
(import_header (identifier) @import.module) @import
