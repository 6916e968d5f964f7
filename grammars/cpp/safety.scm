; inherits: c
; C's rules (grammars/c/safety.scm) hold in C++ too; these patterns add what C++ writes
; differently (see docs/safety.md).

; std::system / ::popen (a qualified name) of a command that is not a literal
((call_expression
   function: (qualified_identifier) @fn
   arguments: (argument_list . [(identifier) (field_expression) (subscript_expression)
                                (call_expression) (pointer_expression) (binary_expression)
                                (conditional_expression) (parenthesized_expression)]))
 @finding.shell_command
 (#match? @fn "^(::|std::)?(system|popen|_popen|_wsystem)$"))

; system / popen of a std::string built with `+`
((call_expression
   function: (identifier) @fn
   arguments: (argument_list . (binary_expression)))
 @finding.shell_command
 (#any-of? @fn "system" "popen" "_popen" "_wsystem"))

; A private key in a raw string
((raw_string_literal) @finding.private_key
 (#match? @finding.private_key "-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----"))
