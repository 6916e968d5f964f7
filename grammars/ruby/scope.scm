[(method) (singleton_method) (block) (do_block) (lambda)] @scope.function
[(class) (module) (singleton_class)] @scope.class
(comment) @comment
[(string) (heredoc_body)] @string
