;;; lsp-copilot.el --- Copilot-style ghost text from lsp-copilot, through eglot  -*- lexical-binding: t; -*-

;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1") (eglot "1.9"))
;; Keywords: tools, convenience, languages
;; License: Apache-2.0

;;; Commentary:

;; Registers the lsp-copilot language server with eglot for programming modes, and adds
;; `lsp-copilot-mode', a minor mode (turned on in buffers eglot manages with lsp-copilot)
;; that asks the server for `textDocument/inlineCompletion' when Emacs is idle after an
;; edit and shows the suggestion as grey text after point.  TAB accepts it, C-g dismisses
;; it, M-<right> / M-<down> accept its next word / line, M-n / M-p show the next / previous
;; suggestion, and C-c \ asks for suggestions now (an explicit request, which may answer
;; several).  Eglot itself has no inline completion; `completion-at-point' works as well,
;; through eglot and the server's `textDocument/completion'.
;;
;;   (require 'lsp-copilot)
;;   (setq lsp-copilot-server-settings '(:maxTokensSingleLine 32))
;;   (add-hook 'python-mode-hook #'eglot-ensure)
;;
;; Commands: `lsp-copilot-stats', `lsp-copilot-toggle', `lsp-copilot-accept',
;; `lsp-copilot-accept-word', `lsp-copilot-accept-line', `lsp-copilot-dismiss',
;; `lsp-copilot-suggest' (ask now, explicitly), `lsp-copilot-next', `lsp-copilot-previous',
;; `lsp-copilot-complete' (what the idle timer runs).

;;; Code:

(require 'cl-lib)
(require 'eglot)
(require 'jsonrpc)

(defgroup lsp-copilot nil
  "Copilot-style completions from a local model, through eglot."
  :group 'tools
  :prefix "lsp-copilot-")

(require 'lsp-copilot-trust)

(defcustom lsp-copilot-server-command nil
  "Command that starts the server, e.g. (\"/path/to/.venv/bin/lsp-copilot\" \"serve\").
Nil: `lsp-copilot' on `exec-path', else in a .venv above the file once you
agree to run it (`lsp-copilot-confirm-server-function'), with \"serve\"."
  :type '(choice (const :tag "Find it" nil) (repeat string))
  :risky t)

(defcustom lsp-copilot-modes
  '(python-mode python-ts-mode js-mode js-ts-mode typescript-mode typescript-ts-mode
    c-mode c++-mode c-ts-mode c++-ts-mode go-mode go-ts-mode rust-mode rust-ts-mode
    java-mode java-ts-mode ruby-mode sh-mode lua-mode emacs-lisp-mode)
  "Major modes whose buffers lsp-copilot serves.
They are registered in `eglot-server-programs'."
  :type '(repeat symbol))

(defcustom lsp-copilot-server-settings nil
  "Server settings, a plist in the server's camelCase spelling.
For example (:model \"/models/qwen2.5-coder-1.5b\" :maxTokensSingleLine 32
:temperature 0.0).  Sent as initializationOptions, under `lspCopilot'."
  :type 'plist
  ;; Settings choose the model, where code goes and the API key's variable: never from a
  ;; project's .dir-locals.el without the question Emacs asks for a risky variable.
  :risky t)

(defcustom lsp-copilot-enable t
  "Whether the server answers completions (toggle with `lsp-copilot-toggle')."
  :type 'boolean)

(defcustom lsp-copilot-idle-delay 0.2
  "Seconds of idle time after an edit before a suggestion is requested."
  :type 'number)

(defcustom lsp-copilot-request-timeout 60
  "Seconds a completion request may take before Emacs gives up on it.
An explicit request (`lsp-copilot-suggest', `completion-at-point') waits for
whole suggestions, which on a CPU can take longer than jsonrpc's 10 s default:
`lsp-copilot-mode' gives its buffers this `jsonrpc-default-request-timeout',
which eglot's own requests (`completion-at-point') use."
  :type 'number)

(defcustom lsp-copilot-shutdown-timeout 15
  "Seconds the server may take to answer `shutdown' (it stops its engine first).
Eglot's own default, 1.5 s, is too short: the server would be killed mid-way."
  :type 'number)

(defface lsp-copilot-ghost-face '((t :inherit shadow))
  "Face of the suggestion shown after point.")

(defclass lsp-copilot-server (eglot-lsp-server)
  ((progress :initform nil :accessor lsp-copilot--progress
             :documentation "Message of the engine's work-done progress, nil when done.")
   (state :initform "starting" :accessor lsp-copilot--state)
   (error :initform nil :accessor lsp-copilot--error))
  :documentation "The lsp-copilot language server.")

;;;; Server registration

(defun lsp-copilot--find-command (&optional no-ask)
  "The server command: the setting, else `lsp-copilot' found.
Looked for in the absolute entries of `exec-path' (a relative one would name the
project), then in a .venv above `default-directory', which runs only once
allowed (`lsp-copilot--server-allowed-p'; not asked when NO-ASK)."
  (or lsp-copilot-server-command
      (let* ((on-path (locate-file "lsp-copilot" (cl-remove-if-not #'file-name-absolute-p exec-path)
                                   exec-suffixes #'file-executable-p))
             (local (unless on-path
                      (cl-loop for venv in '(".venv" "venv" "env")
                               for dir = (locate-dominating-file
                                          default-directory
                                          (concat venv "/bin/lsp-copilot"))
                               when dir return (expand-file-name
                                                (concat venv "/bin/lsp-copilot") dir))))
             (exe (or on-path
                      (and local (file-executable-p local)
                           (lsp-copilot--server-allowed-p local no-ask)
                           local))))
        (and exe (list exe "serve")))))

(defun lsp-copilot--settings ()
  "Server settings, as sent: `lsp-copilot-server-settings' plus `enable'."
  (list :lspCopilot
        (append (list :enable (if lsp-copilot-enable t :json-false))
                (cl-loop for (k v) on lsp-copilot-server-settings by #'cddr
                         unless (eq k :enable) append (list k v)))))

(defun lsp-copilot--contact (&optional _interactive)
  "Eglot contact for lsp-copilot.
\(CLASS PROGRAM ARGS... :initializationOptions FN)."
  (let ((cmd (or (lsp-copilot--find-command)
                 (user-error "lsp-copilot: `lsp-copilot' not found (or the project's own not allowed); set `lsp-copilot-server-command'"))))
    `(lsp-copilot-server ,@cmd :initializationOptions ,(lambda (_server) (lsp-copilot--settings)))))

;;;###autoload
(defun lsp-copilot-register ()
  "Register lsp-copilot with eglot for `lsp-copilot-modes' (idempotent)."
  (setq eglot-server-programs
        (cl-remove-if (lambda (entry) (eq (cdr entry) #'lsp-copilot--contact)) eglot-server-programs))
  (push (cons lsp-copilot-modes #'lsp-copilot--contact) eglot-server-programs)
  (add-hook 'eglot-managed-mode-hook #'lsp-copilot--managed))

(cl-defmethod eglot-client-capabilities ((server lsp-copilot-server))
  "Eglot's capabilities, plus work-done progress (the engine reports its loading)."
  (let ((caps (cl-call-next-method server)))
    (plist-put caps :window (list :workDoneProgress t))))

(cl-defmethod eglot-handle-request
  ((_server lsp-copilot-server) (_method (eql window/workDoneProgress/create)) &key _token)
  "Accept the server's progress token."
  nil)

(cl-defmethod eglot-handle-notification
  ((server lsp-copilot-server) (_method (eql $/progress)) &key _token value)
  "Track the engine's loading for the mode line."
  (pcase (plist-get value :kind)
    ("end" (setf (lsp-copilot--progress server) nil)
     (lsp-copilot--refresh-state server))
    (_ (setf (lsp-copilot--state server) "loading"
             (lsp-copilot--progress server)
             (or (plist-get value :message) (plist-get value :title) ""))))
  (force-mode-line-update t))

(cl-defmethod eglot-handle-notification
  ((server lsp-copilot-server) (_method (eql window/showMessage)) &key type message)
  "Errors (the engine could not start) go to the mode line as well."
  (when (eql type 1)
    (setf (lsp-copilot--state server) "error"
          (lsp-copilot--error server) message)
    (force-mode-line-update t))
  (cl-call-next-method))

(defun lsp-copilot--refresh-state (server)
  "Ask SERVER for its stats and update the mode line from `engine_state'."
  (jsonrpc-async-request
   server :lspCopilot/stats eglot--{}
   :success-fn (lambda (stats)
                 (setf (lsp-copilot--state server)
                       (pcase (plist-get stats :engine_state)
                         ("failed" "error") (state state))
                       (lsp-copilot--error server) (plist-get stats :engine_error))
                 (force-mode-line-update t))
   :error-fn #'ignore :timeout-fn #'ignore))

;;;; Ghost text

(defvar lsp-copilot-mode) ; defined below by `define-minor-mode'
(defvar-local lsp-copilot--overlay nil "Overlay showing the current suggestion.")
(defvar-local lsp-copilot--suggestion nil
  "The suggestion on screen: plist (:text :start :end :params :items :index).
:items are the texts of every item answered (an explicit request may
answer several), :index the position of the one shown.")
(defvar-local lsp-copilot--request-tick nil "Buffer tick of the last request.")
(defvar lsp-copilot--timer nil "Idle timer of the pending request.")
(defvar lsp-copilot-last-latency-ms nil "Round trip of the last inline completion request.")

(defun lsp-copilot--server ()
  "The lsp-copilot server of this buffer, or nil."
  (let ((server (eglot-current-server)))
    (and (cl-typep server 'lsp-copilot-server) server)))

(defun lsp-copilot--notify (method params)
  "Send notification METHOD with PARAMS to this buffer's server, if any."
  (when-let ((server (lsp-copilot--server)))
    (jsonrpc-notify server method params)))

(defun lsp-copilot--hide ()
  "Remove the suggestion from the screen."
  (when (overlayp lsp-copilot--overlay)
    (delete-overlay lsp-copilot--overlay))
  (setq lsp-copilot--overlay nil
        lsp-copilot--suggestion nil))

(defun lsp-copilot--show (text start end params &optional items index ids regions)
  "Show TEXT (to replace START..END) after point; PARAMS identify it in feedback.
ITEMS are all the suggestions answered, INDEX the position of TEXT among them,
IDS the server's id of each (feedback names the one on screen), REGIONS the
\(START . END) each replaces (past the closers right of point it writes again)."
  (lsp-copilot--hide)
  (let ((ov (make-overlay (point) (point) nil t nil))
        (shown (concat text (if (cdr items) (format " (%d/%d)" (1+ index) (length items)) ""))))
    (when (> (length shown) 0)
      (put-text-property 0 1 'cursor t shown))
    (add-face-text-property 0 (length shown) 'lsp-copilot-ghost-face nil shown)
    (overlay-put ov 'after-string shown)
    (overlay-put ov 'lsp-copilot t)
    (overlay-put ov 'priority 1000)
    (setq lsp-copilot--overlay ov
          lsp-copilot--suggestion (list :text text :start start :end end :params params
                                        :items (or items (list text)) :index (or index 0)
                                        :ids ids :regions regions))
    (lsp-copilot--notify :lspCopilot/didShow params)))

(defun lsp-copilot-ghost-text ()
  "The suggestion shown in this buffer, or nil."
  (plist-get lsp-copilot--suggestion :text))

(defun lsp-copilot--item-text (item)
  "The insertText of inline completion ITEM, as a string."
  (let ((text (plist-get item :insertText)))
    (if (stringp text) text (plist-get text :value))))

(defun lsp-copilot--item-id (item)
  "The server's id of inline completion ITEM (in its command's arguments), or nil."
  (let* ((args (plist-get (plist-get item :command) :arguments))
         (first (and (vectorp args) (> (length args) 0) (aref args 0)))
         (id (and (listp first) (plist-get first :id))))
    (and (stringp id) id)))

;;;###autoload
(defun lsp-copilot-complete (&optional explicit select)
  "Ask the server for a suggestion at point now; show it when it arrives.
EXPLICIT: the user asked (triggerKind Invoked: never cut short, several
suggestions); else an automatic request, as after an edit.  SELECT: the
suggestion to show first (0-based)."
  (interactive)
  (when-let ((server (and lsp-copilot-mode (lsp-copilot--server))))
    (eglot--signal-textDocument/didChange)
    (let* ((buffer (current-buffer))
           (tick (buffer-chars-modified-tick))
           (pt (point))
           (sent (float-time))
           (params (append (eglot--TextDocumentPositionParams)
                           (list :context (list :triggerKind (if explicit 1 2))))))
      (when (and explicit (timerp lsp-copilot--timer)) ; its answer would replace this one
        (cancel-timer lsp-copilot--timer)
        (setq lsp-copilot--timer nil))
      (setq lsp-copilot--request-tick tick)
      (jsonrpc-async-request
       server :textDocument/inlineCompletion params
       :success-fn
       (lambda (result)
         (setq lsp-copilot-last-latency-ms (* 1000 (- (float-time) sent)))
         (when (buffer-live-p buffer)
           (with-current-buffer buffer
             ;; Only if the user has not moved on since.
             (when (and (eql tick (buffer-chars-modified-tick)) (eql pt (point))
                        (eql tick lsp-copilot--request-tick))
               (let* ((items (append (if (vectorp result) result (plist-get result :items)) nil))
                      (shown (cl-remove-if (lambda (it) (string-empty-p (lsp-copilot--item-text it)))
                                           items))
                      (regions (mapcar (lambda (it)
                                         (if (plist-get it :range)
                                             (eglot--range-region (plist-get it :range))
                                           (cons pt pt)))
                                       shown))
                      (texts (mapcar #'lsp-copilot--item-text shown))
                      (ids (mapcar #'lsp-copilot--item-id shown))
                      (index (min (or select 0) (max 0 (1- (length texts)))))
                      (text (nth index texts)))
                 (if (or (null text) (string-empty-p text))
                     (lsp-copilot--hide)
                   (let ((region (nth index regions)))
                     (lsp-copilot--show text (car region) (cdr region)
                                        (append
                                         (list :uri (plist-get (plist-get params :textDocument) :uri)
                                               :position (plist-get params :position)
                                               :text text)
                                         (when-let ((id (nth index ids)))
                                           (list :id id)))
                                        texts index ids regions))))))))
       :error-fn (lambda (err) (message "lsp-copilot: %s" (plist-get err :message)))
       :timeout-fn #'ignore
       :timeout lsp-copilot-request-timeout))))

(defun lsp-copilot-suggest ()
  "Ask for suggestions at point now.
An explicit request: never cut short, and it may answer several."
  (interactive)
  (lsp-copilot-complete t))

(defun lsp-copilot-next (&optional count)
  "Show the suggestion COUNT (default 1) after the one on screen, wrapping around.
With a single suggestion on screen, ask for more first (an explicit request)."
  (interactive "p")
  (let* ((s lsp-copilot--suggestion)
         (items (plist-get s :items))
         (count (or count 1)))
    (cond
     ((null s) (lsp-copilot-complete t))
     ((null (cdr items)) (lsp-copilot-complete t (mod count 3)))
     (t (let* ((index (mod (+ (plist-get s :index) count) (length items)))
               (text (nth index items))
               (ids (plist-get s :ids))
               (params (plist-get s :params))
               (next (plist-put (copy-sequence params) :text text)))
          (lsp-copilot--notify :lspCopilot/didReject params)
          (if (nth index ids)
              (setq next (plist-put next :id (nth index ids)))
            (cl-remf next :id))
          (let ((region (or (nth index (plist-get s :regions))
                            (cons (plist-get s :start) (plist-get s :start)))))
            (lsp-copilot--show text (car region) (cdr region)
                               next items index ids (plist-get s :regions))))))))

(defun lsp-copilot-previous (&optional count)
  "Show the suggestion COUNT (default 1) before the one on screen."
  (interactive "p")
  (lsp-copilot-next (- (or count 1))))

(defun lsp-copilot-next-part (text what)
  "The next word (WHAT `word') or line (`line') of TEXT.
A word: leading blanks, then a run of word characters or one other
character.  A line: up to its end; when TEXT starts with a line break,
that break and the line after it."
  (let ((case-fold-search nil))
    (if (eq what 'word)
        (if (string-match "\\`[ \t\n]*\\(?:[[:alnum:]_]+\\|[^[:alnum:]_ \t\n]\\)" text)
            (match-string 0 text)
          text)
      (if (string-match "\\`\\(?:[^\n]+\\|\n[^\n]*\\)" text)
          (match-string 0 text)
        text))))

(defun lsp-copilot--utf-16-length (string)
  "Length of STRING in UTF-16 code units (LSP's default position encoding)."
  (cl-loop for char across string sum (if (> char #xFFFF) 2 1)))

(defun lsp-copilot--accept-part (what)
  "Insert the next WHAT (`word' or `line') of the suggestion on screen.
The server hears a partial accept (didAccept with acceptedChars); the
rest of the suggestion comes back from it at once (typed through)."
  (when-let ((s lsp-copilot--suggestion))
    (let* ((text (plist-get s :text))
           (part (lsp-copilot-next-part text what))
           (params (plist-get s :params)))
      (if (= (length part) (length text))
          (lsp-copilot-accept)
        (lsp-copilot--hide)
        ;; Only the part: the closers the suggestion covers stay (its rest covers them).
        (goto-char (plist-get s :start))
        (insert part) ; an edit: the idle timer asks again, and the rest comes back
        (lsp-copilot--notify :lspCopilot/didAccept
                             (append params (list :acceptedChars (lsp-copilot--units part))))))))

(defun lsp-copilot--units (string)
  "Length of STRING in the server's position encoding.
UTF-16 code units unless the server chose another."
  (pcase (when-let ((server (lsp-copilot--server)))
           (plist-get (eglot--capabilities server) :positionEncoding))
    ("utf-8" (length (encode-coding-string string 'utf-8)))
    ("utf-32" (length string))
    (_ (lsp-copilot--utf-16-length string))))

(defun lsp-copilot-accept-word ()
  "Insert the next word of the suggestion shown after point."
  (interactive)
  (lsp-copilot--accept-part 'word))

(defun lsp-copilot-accept-line ()
  "Insert the next line of the suggestion shown after point."
  (interactive)
  (lsp-copilot--accept-part 'line))

(defun lsp-copilot--schedule (&rest _)
  "After an edit: hide the suggestion and request one when Emacs is idle."
  (when lsp-copilot-mode
    (when lsp-copilot--suggestion
      (lsp-copilot-dismiss))
    (when (timerp lsp-copilot--timer)
      (cancel-timer lsp-copilot--timer))
    (let ((buffer (current-buffer)))
      (setq lsp-copilot--timer
            (run-with-idle-timer
             lsp-copilot-idle-delay nil
             (lambda ()
               (setq lsp-copilot--timer nil)
               (when (and (buffer-live-p buffer) (eq buffer (current-buffer)))
                 (lsp-copilot-complete))))))))

(defun lsp-copilot--post-command ()
  "Dismiss the suggestion when point leaves it."
  (when (and lsp-copilot--overlay
             (not (memq this-command '(lsp-copilot-accept lsp-copilot-dismiss lsp-copilot-next
                                       lsp-copilot-previous lsp-copilot-accept-word
                                       lsp-copilot-accept-line)))
             (/= (point) (overlay-start lsp-copilot--overlay)))
    (lsp-copilot-dismiss)))

(defun lsp-copilot-accept ()
  "Insert the suggestion shown after point."
  (interactive)
  (when-let ((s lsp-copilot--suggestion))
    (let ((text (plist-get s :text))
          (start (plist-get s :start))
          (end (plist-get s :end))
          (params (plist-get s :params)))
      (lsp-copilot--hide)
      (goto-char start)
      (delete-region start end)
      (let ((lsp-copilot-mode nil)) ; inserting our own text is not an edit to react to
        (insert text))
      (lsp-copilot--notify :lspCopilot/didAccept params))))

(defun lsp-copilot-dismiss ()
  "Remove the suggestion shown after point (the server hears it was rejected)."
  (interactive)
  (when-let ((params (plist-get lsp-copilot--suggestion :params)))
    (lsp-copilot--hide)
    (lsp-copilot--notify :lspCopilot/didReject params)))

(defun lsp-copilot--when-shown (command)
  "COMMAND while a suggestion is shown, else nil (the key keeps its usual meaning)."
  (and lsp-copilot--suggestion command))

(defvar lsp-copilot-mode-map
  (let ((map (make-sparse-keymap)))
    (dolist (key '("TAB" "<tab>"))
      (define-key map (kbd key)
        `(menu-item "" lsp-copilot-accept :filter ,(lambda (cmd) (lsp-copilot--when-shown cmd)))))
    (dolist (binding '(("C-g" . lsp-copilot-dismiss)
                       ("M-n" . lsp-copilot-next)
                       ("M-p" . lsp-copilot-previous)
                       ("M-<right>" . lsp-copilot-accept-word)
                       ("M-<down>" . lsp-copilot-accept-line)))
      (define-key map (kbd (car binding))
        `(menu-item "" ,(cdr binding) :filter ,(lambda (cmd) (lsp-copilot--when-shown cmd)))))
    (define-key map (kbd "C-c \\") #'lsp-copilot-suggest)
    map)
  "Keys of `lsp-copilot-mode'.
C-c \\ asks for suggestions; the others are active only while a
suggestion is shown.")

(defun lsp-copilot--lighter ()
  "Mode line: loading (with progress), the last latency, error or off."
  (let ((server (lsp-copilot--server)))
    (cond ((not lsp-copilot-enable) " Copilot[off]")
          ((null server) " Copilot")
          ((lsp-copilot--progress server)
           (format " Copilot[%s]" (lsp-copilot--progress server)))
          ((equal (lsp-copilot--state server) "error") " Copilot[error]")
          ((equal (lsp-copilot--state server) "loading") " Copilot[loading]")
          (lsp-copilot-last-latency-ms (format " Copilot[%dms]" lsp-copilot-last-latency-ms))
          (t " Copilot"))))

;;;###autoload
(define-minor-mode lsp-copilot-mode
  "Ghost text from lsp-copilot after edits; TAB accepts, C-g dismisses."
  :lighter (:eval (lsp-copilot--lighter))
  :keymap lsp-copilot-mode-map
  (if lsp-copilot-mode
      (progn
        (add-hook 'after-change-functions #'lsp-copilot--schedule nil t)
        (add-hook 'post-command-hook #'lsp-copilot--post-command nil t)
        (setq-local jsonrpc-default-request-timeout lsp-copilot-request-timeout))
    (kill-local-variable 'jsonrpc-default-request-timeout)
    (remove-hook 'after-change-functions #'lsp-copilot--schedule t)
    (remove-hook 'post-command-hook #'lsp-copilot--post-command t)
    (lsp-copilot-dismiss)))

(defun lsp-copilot--managed ()
  "Turn `lsp-copilot-mode' on in buffers that eglot manages with lsp-copilot."
  (if (and (bound-and-true-p eglot--managed-mode) (lsp-copilot--server))
      (lsp-copilot-mode 1)
    (when lsp-copilot-mode (lsp-copilot-mode -1))))

(defun lsp-copilot--shutdown-timeout (shutdown server &optional interactive timeout preserve-buffers)
  "Around `eglot-shutdown' (SHUTDOWN): give SERVER time to stop its engine.
INTERACTIVE, TIMEOUT and PRESERVE-BUFFERS as in `eglot-shutdown'."
  (funcall shutdown server interactive
           (or timeout (and (cl-typep server 'lsp-copilot-server) lsp-copilot-shutdown-timeout))
           preserve-buffers))

(advice-add 'eglot-shutdown :around #'lsp-copilot--shutdown-timeout)

(lsp-copilot-register)

(provide 'lsp-copilot)
(require 'lsp-copilot-commands)
;;; lsp-copilot.el ends here
