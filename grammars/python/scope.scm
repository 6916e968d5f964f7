; Scopes the cursor can sit in (innermost wins), and text where completion is prose.
(function_definition) @scope.function
(class_definition) @scope.class
(comment) @comment
(string) @string
