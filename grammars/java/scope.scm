[(method_declaration) (constructor_declaration) (compact_constructor_declaration) (lambda_expression)] @scope.function
[(class_declaration) (interface_declaration) (enum_declaration) (record_declaration) (annotation_type_declaration)] @scope.class
(object_creation_expression (class_body) @scope.body) @scope.class
[(line_comment) (block_comment)] @comment
[(string_literal)] @string
