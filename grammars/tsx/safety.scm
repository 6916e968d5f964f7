; Calls and literals a suggestion should not slip in (see docs/safety.md).
; `@finding.<rule>` is the whole construct (its first line is where a suggestion is cut);
; `(#set! level "warn")`: shown with a warning even under `safety: block`.
; "Built" data: any expression that is not a plain string literal.

; eval / new Function of data that is not a literal
((call_expression
   function: (identifier) @fn
   arguments: (arguments . [(identifier) (member_expression) (subscript_expression)
                            (call_expression) (binary_expression) (parenthesized_expression)
                            (ternary_expression) (template_string (template_substitution))]))
 @finding.eval
 (#eq? @fn "eval"))

((new_expression
   constructor: (identifier) @fn
   arguments: (arguments [(identifier) (member_expression) (subscript_expression)
                          (call_expression) (binary_expression) (parenthesized_expression)
                          (ternary_expression) (template_string (template_substitution))]))
 @finding.eval
 (#eq? @fn "Function"))

; child_process exec / execSync of a built command
((call_expression
   function: (identifier) @fn
   arguments: (arguments . [(identifier) (member_expression) (subscript_expression)
                            (call_expression) (binary_expression) (parenthesized_expression)
                            (ternary_expression) (template_string (template_substitution))]))
 @finding.shell_command
 (#any-of? @fn "exec" "execSync"))

((call_expression
   function: (member_expression object: (identifier) @mod property: (property_identifier) @fn)
   arguments: (arguments . [(identifier) (member_expression) (subscript_expression)
                            (call_expression) (binary_expression) (parenthesized_expression)
                            (ternary_expression) (template_string (template_substitution))]))
 @finding.shell_command
 (#match? @mod "^(child_?[pP]rocess|cp|childProcess|proc)$")
 (#any-of? @fn "exec" "execSync"))

; spawn(built, [...], { shell: true })
((call_expression
   function: [(identifier) @fn (member_expression property: (property_identifier) @fn)]
   arguments: (arguments . [(identifier) (member_expression) (subscript_expression)
                            (call_expression) (binary_expression) (parenthesized_expression)
                            (ternary_expression) (template_string (template_substitution))]
              (object (pair key: (property_identifier) @kw value: (true)))))
 @finding.shell_command
 (#any-of? @fn "spawn" "spawnSync" "execFile" "execFileSync")
 (#eq? @kw "shell"))

; node-serialize's unserialize runs functions found in the data
((call_expression
   function: [(identifier) @fn (member_expression property: (property_identifier) @fn)])
 @finding.unsafe_deserialization
 (#eq? @fn "unserialize")
 (#set! level "warn"))

; SQL built by concatenation or a template string, passed to a query call
((call_expression
   function: (member_expression property: (property_identifier) @fn)
   arguments: (arguments . [(binary_expression) (template_string (template_substitution))] @sql))
 @finding.sql_injection
 (#any-of? @fn "query" "execute" "exec" "raw" "run" "all" "get" "prepare" "$queryRawUnsafe" "$executeRawUnsafe")
 (#match? @sql "(?i)\\b(select|insert|update|delete|drop|create|alter|replace)\\s"))

; TLS verification turned off
((pair key: [(property_identifier) (string)] @kw value: (false))
 @finding.tls_verify_off
 (#match? @kw "^[\"']?(rejectUnauthorized|strictSSL)[\"']?$"))

((assignment_expression
   left: [(member_expression property: (property_identifier) @var)
          (subscript_expression index: (string) @var)]
   right: (_) @value)
 @finding.tls_verify_off
 (#match? @var "^[\"']?NODE_TLS_REJECT_UNAUTHORIZED[\"']?$")
 (#match? @value "^[\"'`]?0[\"'`]?$"))

; A credential-looking literal (8+ characters, letters and digits, no spaces, not a path, no
; placeholder) given to a name like password, secret, token or apiKey
((variable_declarator name: (identifier) @name value: [(string) (template_string)] @value)
 @finding.hardcoded_credential
 (#match? @name "(?i)(password|passwd|pwd|secret|token|api_?key|access_?key|private_?key|credentials?)$")
 (#match? @value "^[\"'`][^/\"'`\\s{}%<>$][^\"'`\\s{}%<>$]{7,}[\"'`]$")
 (#match? @value "[0-9]")
 (#match? @value "[A-Za-z]")
 (#not-match? @value "(?i)(xxx|your|example|changeme|placeholder|dummy|sample|redacted|\\.\\.\\.)"))

((assignment_expression
   left: [(identifier) (member_expression)] @name right: [(string) (template_string)] @value)
 @finding.hardcoded_credential
 (#match? @name "(?i)(password|passwd|pwd|secret|token|api_?key|access_?key|private_?key|credentials?)$")
 (#match? @value "^[\"'`][^/\"'`\\s{}%<>$][^\"'`\\s{}%<>$]{7,}[\"'`]$")
 (#match? @value "[0-9]")
 (#match? @value "[A-Za-z]")
 (#not-match? @value "(?i)(xxx|your|example|changeme|placeholder|dummy|sample|redacted|\\.\\.\\.)"))

((pair key: [(property_identifier) (string)] @name value: [(string) (template_string)] @value)
 @finding.hardcoded_credential
 (#match? @name "(?i)(password|passwd|pwd|secret|token|api_?key|access_?key|private_?key|credentials?)[\"']?$")
 (#match? @value "^[\"'`][^/\"'`\\s{}%<>$][^\"'`\\s{}%<>$]{7,}[\"'`]$")
 (#match? @value "[0-9]")
 (#match? @value "[A-Za-z]")
 (#not-match? @value "(?i)(xxx|your|example|changeme|placeholder|dummy|sample|redacted|\\.\\.\\.)"))

; A private key in a string
([(string) (template_string)] @finding.private_key
 (#match? @finding.private_key "-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----"))
