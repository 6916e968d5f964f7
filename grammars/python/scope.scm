; Scopes the cursor can sit in (innermost wins), and text where completion is prose.
; A decorated definition is one scope with its decorators (same body, earliest start).
(function_definition) @scope.function
(decorated_definition definition: (function_definition body: (_) @scope.body)) @scope.function
(class_definition) @scope.class
(decorated_definition definition: (class_definition body: (_) @scope.body)) @scope.class
(comment) @comment
(string) @string
