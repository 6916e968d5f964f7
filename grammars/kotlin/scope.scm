[(function_declaration) (lambda_literal) (anonymous_function)] @scope.function
[(class_declaration) (object_declaration)] @scope.class
[(line_comment) (multiline_comment)] @comment
(string_literal) @string
