;;; lsp-copilot-commands.el --- Commands of lsp-copilot.el: stats, restart, toggle  -*- lexical-binding: t; -*-

;;; Commentary:

;; The interactive commands that talk to a running lsp-copilot server outside of a
;; completion: its counters, an engine restart and the on/off switch.  Loaded by
;; lsp-copilot.el (put both files on `load-path' and `require' lsp-copilot).

;;; Code:

(require 'cl-lib)
(require 'eglot)
(require 'jsonrpc)

(defvar lsp-copilot-enable)
(declare-function lsp-copilot--server "lsp-copilot")
(declare-function lsp-copilot--settings "lsp-copilot")
(declare-function lsp-copilot--refresh-state "lsp-copilot")
(declare-function lsp-copilot-dismiss "lsp-copilot")

;;;; Commands

(defun lsp-copilot--any-server ()
  "This buffer's lsp-copilot server, or any running one."
  (or (lsp-copilot--server)
      (cl-loop for servers being the hash-values of eglot--servers-by-project
               thereis (cl-find-if (lambda (s) (cl-typep s 'lsp-copilot-server)) servers))
      (user-error "lsp-copilot is not running")))

(defun lsp-copilot-stats ()
  "Show the server's counters (`lspCopilot/stats') in a buffer; return them."
  (interactive)
  (let ((stats (jsonrpc-request (lsp-copilot--any-server) :lspCopilot/stats eglot--{})))
    (with-current-buffer (get-buffer-create "*lsp-copilot stats*")
      (let ((inhibit-read-only t))
        (erase-buffer)
        (cl-loop for (k v) on stats by #'cddr
                 do (insert (format "%-24s %S\n" (substring (symbol-name k) 1) v))))
      (special-mode)
      (when (called-interactively-p 'interactive)
        (display-buffer (current-buffer))))
    stats))

(defun lsp-copilot-restart-engine ()
  "Restart the engine (`lspCopilot.restartEngine'), e.g. after it stayed down."
  (interactive)
  (let ((reply (jsonrpc-request (lsp-copilot--any-server) :workspace/executeCommand
                                '(:command "lspCopilot.restartEngine" :arguments []))))
    (message "lsp-copilot: %s" (or (plist-get reply :message) "restarting"))
    reply))

(defun lsp-copilot-toggle ()
  "Enable or disable completions (sent to the server as the `enable' setting)."
  (interactive)
  (setq lsp-copilot-enable (not lsp-copilot-enable))
  (let ((server (lsp-copilot--any-server)))
    (jsonrpc-notify server :workspace/didChangeConfiguration
                    (list :settings (lsp-copilot--settings)))
    (when lsp-copilot-enable (lsp-copilot--refresh-state server)))
  (unless lsp-copilot-enable
    (dolist (buffer (buffer-list))
      (with-current-buffer buffer (lsp-copilot-dismiss))))
  (force-mode-line-update t)
  (message "lsp-copilot %s" (if lsp-copilot-enable "enabled" "disabled"))
  lsp-copilot-enable)

(provide 'lsp-copilot-commands)
;;; lsp-copilot-commands.el ends here
