(function_item name: (identifier) @name.definition.function) @definition.function
(function_signature_item name: (identifier) @name.definition.function) @definition.function
(struct_item name: (type_identifier) @name.definition.class) @definition.class
(enum_item name: (type_identifier) @name.definition.enum) @definition.enum
(trait_item name: (type_identifier) @name.definition.interface) @definition.interface
(type_item name: (type_identifier) @name.definition.type) @definition.type
(impl_item type: (type_identifier) @name.definition.impl) @definition.impl
(field_declaration name: (field_identifier) @name.definition.field) @definition.field
(const_item name: (identifier) @name.definition.constant) @definition.constant
(static_item name: (identifier) @name.definition.constant) @definition.constant
(macro_definition name: (identifier) @name.definition.macro) @definition.macro
(call_expression function: [(identifier) @name.reference.call (field_expression field: (field_identifier) @name.reference.call) (scoped_identifier name: (identifier) @name.reference.call)]) @reference.call
(type_identifier) @name.reference.type
(scoped_identifier path: (identifier) @name.reference.module) @reference.module
(use_declaration argument: (_) @import.module) @import
(mod_item name: (identifier) @import.module !body) @import
