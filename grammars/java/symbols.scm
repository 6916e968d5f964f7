(class_declaration name: (identifier) @name.definition.class) @definition.class
(record_declaration name: (identifier) @name.definition.class) @definition.class
(interface_declaration name: (identifier) @name.definition.interface) @definition.interface
(enum_declaration name: (identifier) @name.definition.enum) @definition.enum
(method_declaration name: (identifier) @name.definition.method) @definition.method
(constructor_declaration name: (identifier) @name.definition.method) @definition.method
(field_declaration declarator: (variable_declarator name: (identifier) @name.definition.field)) @definition.field
(method_invocation name: (identifier) @name.reference.call) @reference.call
(object_creation_expression type: (type_identifier) @name.reference.class) @reference.class
(type_identifier) @name.reference.type
(method_invocation object: (identifier) @name.reference.module) @reference.module
(import_declaration (scoped_identifier) @import.module) @import
(package_declaration (scoped_identifier) @package) @package.declaration
