(function_definition) @scope.function
(comment) @comment
[(string) (raw_string) (heredoc_body)] @string
