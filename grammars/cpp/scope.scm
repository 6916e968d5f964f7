[(function_definition) (lambda_expression)] @scope.function
[(class_specifier) (struct_specifier) (union_specifier) (enum_specifier) (namespace_definition)] @scope.class
(comment) @comment
[(string_literal) (raw_string_literal) (char_literal)] @string
