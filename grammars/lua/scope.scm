[(function_declaration) (function_definition)] @scope.function
(comment) @comment
(string) @string
