; Attributes (#[test], #[inline]) stand before an item as its siblings: part of its header.
[(function_item) (closure_expression)] @scope.function
[(impl_item) (trait_item) (struct_item) (enum_item) (union_item)] @scope.class
(mod_item) @scope.module
(attribute_item) @scope.attribute
[(line_comment) (block_comment)] @comment
[(string_literal) (raw_string_literal)] @string
