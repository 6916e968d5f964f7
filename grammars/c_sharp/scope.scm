[(method_declaration) (constructor_declaration) (local_function_statement) (lambda_expression)] @scope.function
[(class_declaration) (struct_declaration) (interface_declaration) (record_declaration) (enum_declaration)] @scope.class
(comment) @comment
[(string_literal) (verbatim_string_literal) (interpolated_string_expression)] @string
