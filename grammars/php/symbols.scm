(function_definition name: (name) @name.definition.function) @definition.function
(method_declaration name: (name) @name.definition.method) @definition.method
(class_declaration name: (name) @name.definition.class) @definition.class
(interface_declaration name: (name) @name.definition.interface) @definition.interface
(trait_declaration name: (name) @name.definition.class) @definition.class
(enum_declaration name: (name) @name.definition.enum) @definition.enum
(property_declaration (property_element name: (variable_name (name) @name.definition.field))) @definition.field
(const_declaration (const_element (name) @name.definition.constant)) @definition.constant
(function_call_expression function: [(name) (qualified_name)] @name.reference.call) @reference.call
(member_call_expression name: (name) @name.reference.call) @reference.call
(scoped_call_expression name: (name) @name.reference.call) @reference.call
(object_creation_expression (name) @name.reference.class) @reference.class
(namespace_use_clause [(qualified_name) (name)] @import.module) @import
(require_expression (string (string_content) @import.module)) @import
(require_once_expression (string (string_content) @import.module)) @import
(include_expression (string (string_content) @import.module)) @import
(include_once_expression (string (string_content) @import.module)) @import
