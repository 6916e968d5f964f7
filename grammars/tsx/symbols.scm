(function_declaration name: (identifier) @name.definition.function) @definition.function
(function_signature name: (identifier) @name.definition.function) @definition.function
(class_declaration name: (type_identifier) @name.definition.class) @definition.class
(abstract_class_declaration name: (type_identifier) @name.definition.class) @definition.class
(interface_declaration name: (type_identifier) @name.definition.interface) @definition.interface
(type_alias_declaration name: (type_identifier) @name.definition.type) @definition.type
(enum_declaration name: (identifier) @name.definition.enum) @definition.enum
(method_definition name: (property_identifier) @name.definition.method) @definition.method
(method_signature name: (property_identifier) @name.definition.method) @definition.method
(abstract_method_signature name: (property_identifier) @name.definition.method) @definition.method
(public_field_definition name: (property_identifier) @name.definition.field) @definition.field
(property_signature name: (property_identifier) @name.definition.field) @definition.field
(program (lexical_declaration (variable_declarator name: (identifier) @name.definition.function value: [(arrow_function) (function_expression)])) @definition.function)
(program (export_statement (lexical_declaration (variable_declarator name: (identifier) @name.definition.function value: [(arrow_function) (function_expression)])) @definition.function))
(program (lexical_declaration (variable_declarator name: (identifier) @name.definition.constant value: [(number) (string) (object) (array) (new_expression) (call_expression)])) @definition.constant)
(call_expression function: [(identifier) @name.reference.call (member_expression property: (property_identifier) @name.reference.call)]) @reference.call
(new_expression constructor: (identifier) @name.reference.class) @reference.class
(type_identifier) @name.reference.type
(member_expression object: (identifier) @name.reference.module) @reference.module
(import_statement source: (string (string_fragment) @import.module)) @import
(import_specifier name: (identifier) @import.name)
