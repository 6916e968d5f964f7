[(function_declaration) (function_expression) (arrow_function) (method_definition) (generator_function_declaration)] @scope.function
[(class_declaration) (abstract_class_declaration) (class) (interface_declaration)] @scope.class
(comment) @comment
[(string) (template_string)] @string
