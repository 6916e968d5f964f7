; Calls and literals a suggestion should not slip in (see docs/safety.md).
; `@finding.<rule>` is the whole construct (its first line is where a suggestion is cut);
; `(#set! level "warn")`: shown with a warning even under `safety: block`.
; "Built" data: any expression that is not a plain string literal.

; eval / exec of data that is not a literal
((call
   function: (identifier) @fn
   arguments: (argument_list . [(identifier) (attribute) (subscript) (call) (binary_operator)
                                (parenthesized_expression) (conditional_expression)
                                (string (interpolation))]))
 @finding.eval
 (#any-of? @fn "eval" "exec"))

; os.system / os.popen of a command that is not a literal
((call
   function: (attribute object: (identifier) @mod attribute: (identifier) @fn)
   arguments: (argument_list . [(identifier) (attribute) (subscript) (call) (binary_operator)
                                (parenthesized_expression) (conditional_expression)
                                (string (interpolation))]))
 @finding.shell_command
 (#eq? @mod "os")
 (#any-of? @fn "system" "popen"))

; subprocess.*(built, ..., shell=True)
((call
   function: (attribute object: (identifier) @mod)
   arguments: (argument_list . [(identifier) (attribute) (subscript) (call) (binary_operator)
                                (parenthesized_expression) (conditional_expression)
                                (string (interpolation))]
               (keyword_argument name: (identifier) @kw value: (true))))
 @finding.shell_command
 (#eq? @mod "subprocess")
 (#eq? @kw "shell"))

; pickle / marshal: running code from the data (fine on data you wrote yourself)
((call
   function: (attribute object: (identifier) @mod attribute: (identifier) @fn))
 @finding.unsafe_deserialization
 (#any-of? @mod "pickle" "cPickle" "_pickle" "dill" "marshal")
 (#any-of? @fn "loads" "load")
 (#set! level "warn"))

; yaml.load without a safe loader, yaml.unsafe_load
((call
   function: (attribute object: (identifier) @mod attribute: (identifier) @fn)
   arguments: (argument_list) @args)
 @finding.yaml_load
 (#eq? @mod "yaml")
 (#any-of? @fn "load" "load_all")
 (#not-match? @args "SafeLoader|BaseLoader"))

((call
   function: (attribute object: (identifier) @mod attribute: (identifier) @fn))
 @finding.yaml_load
 (#eq? @mod "yaml")
 (#any-of? @fn "unsafe_load" "unsafe_load_all"))

; SQL built by concatenation, % or an f-string, passed to execute
((call
   function: (attribute attribute: (identifier) @fn)
   arguments: (argument_list . [(binary_operator) (string (interpolation))] @sql))
 @finding.sql_injection
 (#any-of? @fn "execute" "executemany" "executescript")
 (#match? @sql "(?i)\\b(select|insert|update|delete|drop|create|alter|replace)\\s"))

((call
   function: (attribute attribute: (identifier) @fn)
   arguments: (argument_list . (call function: (attribute object: (string) @sql
                                                       attribute: (identifier) @fmt))))
 @finding.sql_injection
 (#any-of? @fn "execute" "executemany" "executescript")
 (#eq? @fmt "format")
 (#match? @sql "(?i)\\b(select|insert|update|delete|drop|create|alter|replace)\\s"))

; TLS verification turned off
((call
   arguments: (argument_list (keyword_argument name: (identifier) @kw value: (false))))
 @finding.tls_verify_off
 (#eq? @kw "verify"))

((call
   arguments: (argument_list (keyword_argument name: (identifier) @kw
                                               value: (attribute attribute: (identifier) @v))))
 @finding.tls_verify_off
 (#any-of? @kw "cert_reqs" "verify_mode")
 (#eq? @v "CERT_NONE"))

((call function: (attribute attribute: (identifier) @fn))
 @finding.tls_verify_off
 (#eq? @fn "_create_unverified_context"))

((assignment left: (attribute attribute: (identifier) @attr) right: (false))
 @finding.tls_verify_off
 (#eq? @attr "check_hostname"))

((assignment left: (attribute attribute: (identifier) @attr)
             right: (attribute attribute: (identifier) @v))
 @finding.tls_verify_off
 (#eq? @attr "verify_mode")
 (#eq? @v "CERT_NONE"))

; A credential-looking literal (8+ characters, letters and digits, no spaces, not a path, no
; placeholder) given to a name like password, secret, token or api_key
((assignment left: [(identifier) (attribute)] @name right: (string) @value)
 @finding.hardcoded_credential
 (#match? @name "(?i)(password|passwd|pwd|secret|token|api_?key|access_?key|private_?key|credentials?)$")
 (#match? @value "^[rbuRBU]?[\"'][^/\"'\\s{}%<>$][^\"'\\s{}%<>$]{7,}[\"']$")
 (#match? @value "[0-9]")
 (#match? @value "[A-Za-z]")
 (#not-match? @value "(?i)(xxx|your|example|changeme|placeholder|dummy|sample|redacted|\\.\\.\\.)"))

((keyword_argument name: (identifier) @name value: (string) @value)
 @finding.hardcoded_credential
 (#match? @name "(?i)(password|passwd|pwd|secret|token|api_?key|access_?key|private_?key|credentials?)$")
 (#match? @value "^[rbuRBU]?[\"'][^/\"'\\s{}%<>$][^\"'\\s{}%<>$]{7,}[\"']$")
 (#match? @value "[0-9]")
 (#match? @value "[A-Za-z]")
 (#not-match? @value "(?i)(xxx|your|example|changeme|placeholder|dummy|sample|redacted|\\.\\.\\.)"))

((pair key: (string) @name value: (string) @value)
 @finding.hardcoded_credential
 (#match? @name "(?i)(password|passwd|pwd|secret|token|api_?key|access_?key|private_?key|credentials?)[\"']$")
 (#match? @value "^[rbuRBU]?[\"'][^/\"'\\s{}%<>$][^\"'\\s{}%<>$]{7,}[\"']$")
 (#match? @value "[0-9]")
 (#match? @value "[A-Za-z]")
 (#not-match? @value "(?i)(xxx|your|example|changeme|placeholder|dummy|sample|redacted|\\.\\.\\.)"))

; A private key in a string
((string) @finding.private_key
 (#match? @finding.private_key "-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----"))
