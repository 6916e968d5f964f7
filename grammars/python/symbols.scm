; Definitions (with names), fields, references and imports.
(function_definition name: (identifier) @name.definition.function) @definition.function
(class_definition name: (identifier) @name.definition.class) @definition.class
(module (assignment left: (identifier) @name.definition.constant) @definition.constant)
(module (expression_statement (assignment left: (identifier) @name.definition.constant) @definition.constant))
(class_definition body: (block (assignment left: (identifier) @name.definition.field) @definition.field))
(class_definition body: (block (expression_statement (assignment left: (identifier) @name.definition.field) @definition.field)))
(call function: [(identifier) @name.reference.call (attribute attribute: (identifier) @name.reference.call)]) @reference.call
(attribute object: (identifier) @name.reference.module) @reference.module
(type (identifier) @name.reference.type) @reference.type
(import_statement name: [(dotted_name) @import.module (aliased_import name: (dotted_name) @import.module)]) @import
(import_from_statement module_name: [(dotted_name) (relative_import)] @import.module) @import
(import_from_statement name: [(dotted_name) @import.name (aliased_import name: (dotted_name) @import.name)])
