[(function_declaration) (function_expression) (arrow_function) (method_definition) (generator_function_declaration)] @scope.function
[(class_declaration) (class)] @scope.class
(comment) @comment
[(string) (template_string)] @string
