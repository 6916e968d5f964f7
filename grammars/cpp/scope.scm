; A template's parameter line belongs to the header of the definition it introduces.
[(function_definition) (lambda_expression)] @scope.function
(template_declaration (function_definition body: (_) @scope.body)) @scope.function
[(class_specifier) (struct_specifier) (union_specifier) (enum_specifier)] @scope.class
(template_declaration [(class_specifier body: (_) @scope.body) (struct_specifier body: (_) @scope.body)]) @scope.class
[(namespace_definition) (linkage_specification)] @scope.module
(comment) @comment
[(string_literal) (raw_string_literal) (char_literal)] @string
