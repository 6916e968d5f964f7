[(method_declaration) (constructor_declaration) (destructor_declaration) (operator_declaration) (local_function_statement) (lambda_expression) (accessor_declaration)] @scope.function
[(class_declaration) (struct_declaration) (interface_declaration) (record_declaration) (enum_declaration)] @scope.class
[(namespace_declaration) (file_scoped_namespace_declaration)] @scope.module
(comment) @comment
[(string_literal) (verbatim_string_literal) (interpolated_string_expression)] @string
