[(method_declaration) (constructor_declaration) (lambda_expression)] @scope.function
[(class_declaration) (interface_declaration) (enum_declaration) (record_declaration)] @scope.class
[(line_comment) (block_comment)] @comment
[(string_literal)] @string
