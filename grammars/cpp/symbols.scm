(function_definition declarator: (function_declarator declarator: [(identifier) (field_identifier)] @name.definition.function)) @definition.function
(function_definition declarator: (function_declarator declarator: (qualified_identifier name: (identifier) @name.definition.function))) @definition.function
(function_definition declarator: (reference_declarator (function_declarator declarator: [(identifier) (field_identifier)] @name.definition.function))) @definition.function
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: [(identifier) (field_identifier)] @name.definition.function))) @definition.function
(declaration declarator: (function_declarator declarator: [(identifier) (qualified_identifier)] @name.definition.function)) @definition.function
(field_declaration declarator: (function_declarator declarator: (field_identifier) @name.definition.method)) @definition.method
(class_specifier name: (type_identifier) @name.definition.class body: (_)) @definition.class
(struct_specifier name: (type_identifier) @name.definition.class body: (_)) @definition.class
(enum_specifier name: (type_identifier) @name.definition.enum body: (_)) @definition.enum
(type_definition declarator: (type_identifier) @name.definition.type) @definition.type
(alias_declaration name: (type_identifier) @name.definition.type) @definition.type
(field_declaration declarator: (field_identifier) @name.definition.field) @definition.field
(preproc_def name: (identifier) @name.definition.constant) @definition.constant
(preproc_function_def name: (identifier) @name.definition.macro) @definition.macro
(call_expression function: [(identifier) @name.reference.call (field_expression field: (field_identifier) @name.reference.call) (qualified_identifier name: (identifier) @name.reference.call)]) @reference.call
(type_identifier) @name.reference.type
(preproc_include path: [(string_literal) (system_lib_string)] @import.module) @import
