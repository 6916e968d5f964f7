; Calls and literals a suggestion should not slip in (see docs/safety.md).
; `@finding.<rule>` is the whole construct (its first line is where a suggestion is cut);
; `(#set! level "warn")`: shown with a warning even under `safety: block`.
; "Built" data: any expression that is not a string literal.

; system / popen of a command that is not a literal
((call_expression
   function: (identifier) @fn
   arguments: (argument_list . [(identifier) (field_expression) (subscript_expression)
                                (call_expression) (pointer_expression)
                                (conditional_expression) (parenthesized_expression)]))
 @finding.shell_command
 (#any-of? @fn "system" "popen" "_popen" "_wsystem"))

; execl("/bin/sh", "sh", "-c", built, ...)
((call_expression
   function: (identifier) @fn
   arguments: (argument_list (string_literal) @flag
                             . [(identifier) (field_expression) (subscript_expression)
                                (call_expression) (pointer_expression)
                                (conditional_expression) (parenthesized_expression)]))
 @finding.shell_command
 (#match? @fn "^exec(l|lp|le|v|vp|ve)$")
 (#eq? @flag "\"-c\""))

; A query string that is not a literal, passed to an API with no parameters
((call_expression
   function: (identifier) @fn
   arguments: (argument_list . (_) . [(identifier) (field_expression) (subscript_expression)
                                      (call_expression) (pointer_expression)]))
 @finding.sql_injection
 (#any-of? @fn "sqlite3_exec" "mysql_query" "mysql_real_query" "PQexec")
 (#set! level "warn"))

; TLS verification turned off
((call_expression
   function: (identifier) @fn
   arguments: (argument_list . (_) . (identifier) @opt . (_) @value))
 @finding.tls_verify_off
 (#eq? @fn "curl_easy_setopt")
 (#any-of? @opt "CURLOPT_SSL_VERIFYPEER" "CURLOPT_SSL_VERIFYHOST")
 (#match? @value "^(0L?|FALSE|false)$"))

((call_expression
   function: (identifier) @fn
   arguments: (argument_list . (_) . (identifier) @mode))
 @finding.tls_verify_off
 (#any-of? @fn "SSL_CTX_set_verify" "SSL_set_verify")
 (#eq? @mode "SSL_VERIFY_NONE"))

; A credential-looking literal (8+ characters, letters and digits, no spaces, not a path, no
; placeholder) given to a name like password, secret, token or api_key
((init_declarator
   declarator: [(identifier) (pointer_declarator) (array_declarator)] @name
   value: (string_literal) @value)
 @finding.hardcoded_credential
 (#match? @name "(?i)(password|passwd|pwd|secret|token|api_?key|access_?key|private_?key|credentials?)(\\[[0-9]*\\])?$")
 (#match? @value "^\"[^/\"\\s{}%<>$][^\"\\s{}%<>$]{7,}\"$")
 (#match? @value "[0-9]")
 (#match? @value "[A-Za-z]")
 (#not-match? @value "(?i)(xxx|your|example|changeme|placeholder|dummy|sample|redacted|\\.\\.\\.)"))

; A private key in a string
((string_literal) @finding.private_key
 (#match? @finding.private_key "-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----"))
