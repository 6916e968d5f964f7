[(function_item) (closure_expression)] @scope.function
[(impl_item) (trait_item) (struct_item) (enum_item) (mod_item)] @scope.class
[(line_comment) (block_comment)] @comment
[(string_literal) (raw_string_literal)] @string
