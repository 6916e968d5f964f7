[(function_declaration) (method_declaration) (func_literal)] @scope.function
(type_declaration) @scope.class
(comment) @comment
[(interpreted_string_literal) (raw_string_literal)] @string
