; Calls and literals a suggestion should not slip in (see docs/safety.md).
; `@finding.<rule>` is the whole construct (its first line is where a suggestion is cut);
; `(#set! level "warn")`: shown with a warning even under `safety: block`.
; "Built" data: any expression that is not a string literal.

; A script engine's eval of data that is not a literal
((method_invocation
   object: (identifier) @obj name: (identifier) @fn
   arguments: (argument_list . [(identifier) (field_access) (method_invocation)
                                (binary_expression) (parenthesized_expression)
                                (ternary_expression) (array_access)]))
 @finding.eval
 (#match? @obj "(?i)engine$")
 (#eq? @fn "eval"))

; Runtime.getRuntime().exec(built)
((method_invocation
   object: (method_invocation name: (identifier) @rt)
   name: (identifier) @fn
   arguments: (argument_list . [(identifier) (field_access) (method_invocation)
                                (binary_expression) (parenthesized_expression)
                                (ternary_expression) (array_access)]))
 @finding.shell_command
 (#eq? @rt "getRuntime")
 (#eq? @fn "exec"))

; new ProcessBuilder("sh", "-c", built)
((object_creation_expression
   type: (type_identifier) @type
   arguments: (argument_list (string_literal) @shell . (string_literal) @flag
                             . [(identifier) (field_access) (method_invocation)
                                (binary_expression) (parenthesized_expression)
                                (ternary_expression) (array_access)]))
 @finding.shell_command
 (#eq? @type "ProcessBuilder")
 (#match? @shell "^\"(/usr)?(/bin/)?(ba|z|da)?sh\"$")
 (#eq? @flag "\"-c\""))

; Java deserialization runs code chosen by the data (fine on data you wrote yourself)
((object_creation_expression type: (type_identifier) @type)
 @finding.unsafe_deserialization
 (#eq? @type "ObjectInputStream")
 (#set! level "warn"))

; SQL built by concatenation or String.format, passed to a statement
((method_invocation
   name: (identifier) @fn
   arguments: (argument_list . [(binary_expression) (method_invocation)] @sql))
 @finding.sql_injection
 (#match? @fn "^(execute|executeQuery|executeUpdate|executeLargeUpdate|addBatch|prepareStatement|createQuery|createNativeQuery)$")
 (#match? @sql "^(String\\.format\\(|\")")
 (#match? @sql "(?i)\\b(select|insert|update|delete|drop|create|alter|replace)\\s"))

; TLS verification turned off: a host name verifier that accepts every host
((method_invocation
   name: (identifier) @fn
   arguments: (argument_list (lambda_expression body: (true))))
 @finding.tls_verify_off
 (#match? @fn "^set(Default)?HostnameVerifier$"))

([(identifier) (field_access) (type_identifier)] @finding.tls_verify_off
 (#match? @finding.tls_verify_off "^(NoopHostnameVerifier|ALLOW_ALL_HOSTNAME_VERIFIER|SSLConnectionSocketFactory\\.ALLOW_ALL_HOSTNAME_VERIFIER|InsecureTrustManagerFactory)$"))

; A credential-looking literal (8+ characters, letters and digits, no spaces, not a path, no
; placeholder) given to a name like password, secret, token or apiKey
([(variable_declarator name: (identifier) @name value: (string_literal) @value)
  (assignment_expression left: [(identifier) (field_access)] @name right: (string_literal) @value)]
 @finding.hardcoded_credential
 (#match? @name "(?i)(password|passwd|pwd|secret|token|api_?key|access_?key|private_?key|credentials?)$")
 (#match? @value "^\"[^/\"\\s{}%<>$][^\"\\s{}%<>$]{7,}\"$")
 (#match? @value "[0-9]")
 (#match? @value "[A-Za-z]")
 (#not-match? @value "(?i)(xxx|your|example|changeme|placeholder|dummy|sample|redacted|\\.\\.\\.)"))

; A private key in a string
((string_literal) @finding.private_key
 (#match? @finding.private_key "-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----"))
