; Decorators stand before a class member as its siblings: part of its header.
[(function_declaration) (function_expression) (arrow_function) (method_definition) (generator_function_declaration) (generator_function)] @scope.function
[(class_declaration) (abstract_class_declaration) (class) (interface_declaration)] @scope.class
[(internal_module) (module)] @scope.module
(decorator) @scope.attribute
(comment) @comment
[(string) (template_string)] @string
