(function_definition) @scope.function
[(struct_specifier) (union_specifier) (enum_specifier)] @scope.class
(comment) @comment
[(string_literal) (char_literal)] @string
