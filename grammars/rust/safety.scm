; Calls and literals a suggestion should not slip in (see docs/safety.md).
; `@finding.<rule>` is the whole construct (its first line is where a suggestion is cut);
; `(#set! level "warn")`: shown with a warning even under `safety: block`.
; "Built" data: any expression that is not a string literal.

; Command::new("sh").arg("-c").arg(built)
((call_expression
   function: (field_expression
     value: (call_expression
       function: (field_expression
         value: (call_expression function: (scoped_identifier) @new
                                 arguments: (arguments . (string_literal) @shell))
         field: (field_identifier) @arg1)
       arguments: (arguments . (string_literal) @flag))
     field: (field_identifier) @arg2)
   arguments: (arguments . [(identifier) (field_expression) (call_expression) (macro_invocation)
                            (reference_expression) (binary_expression) (index_expression)]))
 @finding.shell_command
 (#match? @new "Command::new$")
 (#match? @shell "^\"(/usr)?(/bin/)?(ba|z|da)?sh\"$")
 (#eq? @arg1 "arg")
 (#eq? @flag "\"-c\"")
 (#eq? @arg2 "arg"))

; Command::new("sh").args(["-c", built])
((call_expression
   function: (field_expression
     value: (call_expression function: (scoped_identifier) @new
                             arguments: (arguments . (string_literal) @shell))
     field: (field_identifier) @args)
   arguments: (arguments . [(array_expression (string_literal) @flag
                                              . [(identifier) (field_expression) (call_expression)
                                                 (macro_invocation) (reference_expression)
                                                 (binary_expression) (index_expression)])
                            (reference_expression
                              value: (array_expression (string_literal) @flag
                                                       . [(identifier) (field_expression)
                                                          (call_expression) (macro_invocation)
                                                          (reference_expression)
                                                          (binary_expression)
                                                          (index_expression)]))]))
 @finding.shell_command
 (#match? @new "Command::new$")
 (#match? @shell "^\"(/usr)?(/bin/)?(ba|z|da)?sh\"$")
 (#eq? @args "args")
 (#eq? @flag "\"-c\""))

; SQL built with format! or concatenation, passed to a query call
((call_expression
   function: [(field_expression field: (field_identifier) @fn) (scoped_identifier name: (identifier) @fn)
              (identifier) @fn]
   arguments: (arguments . [(macro_invocation) (reference_expression) (binary_expression)] @sql))
 @finding.sql_injection
 (#match? @fn "^(execute|execute_batch|query|query_row|query_map|query_as|query_scalar|prepare|prepare_cached|batch_execute|simple_query|sql_query)$")
 (#match? @sql "^&?(format!|\"|String)")
 (#match? @sql "(?i)\\b(select|insert|update|delete|drop|create|alter|replace)\\s"))

; TLS verification turned off
((call_expression
   function: (field_expression field: (field_identifier) @fn)
   arguments: (arguments . (boolean_literal) @value))
 @finding.tls_verify_off
 (#any-of? @fn "danger_accept_invalid_certs" "danger_accept_invalid_hostnames")
 (#eq? @value "true"))

((call_expression
   function: (field_expression field: (field_identifier) @fn)
   arguments: (arguments . (scoped_identifier) @mode))
 @finding.tls_verify_off
 (#eq? @fn "set_verify")
 (#match? @mode "SslVerifyMode::NONE$"))

; A credential-looking literal (8+ characters, letters and digits, no spaces, not a path, no
; placeholder) given to a name like password, secret, token or api_key
([(let_declaration pattern: (identifier) @name value: [(string_literal) (raw_string_literal)] @value)
  (const_item name: (identifier) @name value: [(string_literal) (raw_string_literal)] @value)
  (static_item name: (identifier) @name value: [(string_literal) (raw_string_literal)] @value)
  (field_initializer field: (field_identifier) @name value: [(string_literal) (raw_string_literal)] @value)]
 @finding.hardcoded_credential
 (#match? @name "(?i)(password|passwd|pwd|secret|token|api_?key|access_?key|private_?key|credentials?)$")
 (#match? @value "^r?#*\"[^/\"\\s{}%<>$][^\"\\s{}%<>$]{7,}\"#*$")
 (#match? @value "[0-9]")
 (#match? @value "[A-Za-z]")
 (#not-match? @value "(?i)(xxx|your|example|changeme|placeholder|dummy|sample|redacted|\\.\\.\\.)"))

; A private key in a string
([(string_literal) (raw_string_literal)] @finding.private_key
 (#match? @finding.private_key "-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----"))
