(class_declaration name: (identifier) @name.definition.class) @definition.class
(struct_declaration name: (identifier) @name.definition.class) @definition.class
(record_declaration name: (identifier) @name.definition.class) @definition.class
(interface_declaration name: (identifier) @name.definition.interface) @definition.interface
(enum_declaration name: (identifier) @name.definition.enum) @definition.enum
(method_declaration name: (identifier) @name.definition.method) @definition.method
(constructor_declaration name: (identifier) @name.definition.method) @definition.method
(property_declaration name: (identifier) @name.definition.field) @definition.field
(field_declaration (variable_declaration (variable_declarator name: (identifier) @name.definition.field))) @definition.field
(invocation_expression function: [(identifier) @name.reference.call (member_access_expression name: (identifier) @name.reference.call)]) @reference.call
(object_creation_expression type: (identifier) @name.reference.class) @reference.class
(member_access_expression expression: (identifier) @name.reference.module) @reference.module
(using_directive [(qualified_name) (identifier)] @import.module) @import
