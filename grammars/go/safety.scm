; Calls and literals a suggestion should not slip in (see docs/safety.md).
; `@finding.<rule>` is the whole construct (its first line is where a suggestion is cut);
; `(#set! level "warn")`: shown with a warning even under `safety: block`.
; "Built" data: any expression that is not a string literal.

; exec.Command("sh", "-c", built)
((call_expression
   function: (selector_expression operand: (identifier) @pkg field: (field_identifier) @fn)
   arguments: (argument_list (interpreted_string_literal) @shell . (interpreted_string_literal) @flag
                             . [(identifier) (selector_expression) (call_expression)
                                (binary_expression) (index_expression)
                                (parenthesized_expression)]))
 @finding.shell_command
 (#eq? @pkg "exec")
 (#any-of? @fn "Command" "CommandContext")
 (#match? @shell "^\"(/usr)?(/bin/)?(ba|z|da)?sh\"$")
 (#eq? @flag "\"-c\""))

; SQL built by concatenation or fmt.Sprintf, passed to a query call
((call_expression
   function: (selector_expression field: (field_identifier) @fn)
   arguments: (argument_list [(binary_expression) (call_expression)] @sql))
 @finding.sql_injection
 (#match? @fn "^(Query|QueryRow|Exec|Prepare)(Context)?$")
 (#match? @sql "^(fmt\\.Sprintf\\(|\"|`)")
 (#match? @sql "(?i)\\b(select|insert|update|delete|drop|create|alter|replace)\\s"))

; TLS verification turned off
((keyed_element
   key: (literal_element (identifier) @key) value: (literal_element (true)))
 @finding.tls_verify_off
 (#eq? @key "InsecureSkipVerify"))

((assignment_statement
   left: (expression_list (selector_expression field: (field_identifier) @key))
   right: (expression_list (true)))
 @finding.tls_verify_off
 (#eq? @key "InsecureSkipVerify"))

; A credential-looking literal (8+ characters, letters and digits, no spaces, not a path, no
; placeholder) given to a name like password, secret, token or apiKey
([(const_spec name: (identifier) @name
              value: (expression_list . [(interpreted_string_literal) (raw_string_literal)] @value))
  (var_spec name: (identifier) @name
            value: (expression_list . [(interpreted_string_literal) (raw_string_literal)] @value))
  (short_var_declaration left: (expression_list . (identifier) @name)
                         right: (expression_list . [(interpreted_string_literal) (raw_string_literal)] @value))
  (assignment_statement left: (expression_list . [(identifier) (selector_expression)] @name)
                        right: (expression_list . [(interpreted_string_literal) (raw_string_literal)] @value))
  (keyed_element key: (literal_element [(identifier) (interpreted_string_literal)] @name)
                 value: (literal_element [(interpreted_string_literal) (raw_string_literal)] @value))]
 @finding.hardcoded_credential
 (#match? @name "(?i)(password|passwd|pwd|secret|token|api_?key|access_?key|private_?key|credentials?)\"?$")
 (#match? @value "^[\"`][^/\"`\\s{}%<>$][^\"`\\s{}%<>$]{7,}[\"`]$")
 (#match? @value "[0-9]")
 (#match? @value "[A-Za-z]")
 (#not-match? @value "(?i)(xxx|your|example|changeme|placeholder|dummy|sample|redacted|\\.\\.\\.)"))

; A private key in a string
([(interpreted_string_literal) (raw_string_literal)] @finding.private_key
 (#match? @finding.private_key "-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----"))
