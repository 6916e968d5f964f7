[(function_definition) (method_declaration) (anonymous_function) (arrow_function)] @scope.function
[(class_declaration) (interface_declaration) (trait_declaration) (enum_declaration)] @scope.class
(namespace_definition) @scope.module
(comment) @comment
[(string) (encapsed_string) (heredoc)] @string
