[(function_declaration) (lambda_literal) (anonymous_function) (secondary_constructor)] @scope.function
[(class_declaration) (object_declaration) (companion_object)] @scope.class
[(line_comment) (multiline_comment)] @comment
(string_literal) @string
