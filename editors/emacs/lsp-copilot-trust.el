;;; lsp-copilot-trust.el --- Whether a project's own lsp-copilot may run  -*- lexical-binding: t; -*-

;;; Commentary:

;; A cloned repository can ship its own `.venv/bin/lsp-copilot': lsp-copilot.el runs such
;; a server only once the user said yes to that very file.  Answers are kept with the
;; file's size and SHA-256 in `lsp-copilot-trust-file' (under `user-emacs-directory',
;; never in the project), so that a file replaced since (a pull) is asked about again.
;; Loaded by lsp-copilot.el.

;;; Code:

(defcustom lsp-copilot-confirm-server-function #'lsp-copilot-confirm-server
  "Function that says whether a server found in a project's .venv may run.
Called with its path; returns `run', `never' (until the file changes) or nil
\(not now).
A cloned repository can put any program there.  Answers are kept in
`lsp-copilot-trust-file'."
  :type 'function
  :group 'lsp-copilot
  :risky t)

(defcustom lsp-copilot-trust-file (locate-user-emacs-file "lsp-copilot-trusted-servers.eld")
  "File that keeps the answers about project servers, with each file's fingerprint."
  :type 'file
  :group 'lsp-copilot
  :risky t)

(defun lsp-copilot-confirm-server (path)
  "Ask whether PATH, a server a project contains, may run: `run' or `never'.
No question (nil) in batch mode."
  (unless noninteractive
    (if (yes-or-no-p (format "lsp-copilot: run the server this project contains, %s?  \
A cloned repository can put any program there (no: never, until it changes) " path))
        'run
      'never)))

(defun lsp-copilot--fingerprint (path)
  "PATH's size and SHA-256, or nil when it cannot be read."
  (ignore-errors
    (with-temp-buffer
      (set-buffer-multibyte nil)
      (insert-file-contents-literally path)
      (format "%d:%s" (buffer-size) (secure-hash 'sha256 (current-buffer))))))

(defun lsp-copilot--answers ()
  "The kept answers: an alist of (PATH FINGERPRINT ANSWER)."
  (ignore-errors
    (with-temp-buffer
      (insert-file-contents lsp-copilot-trust-file)
      (read (current-buffer)))))

(defun lsp-copilot--server-allowed-p (path &optional no-ask)
  "Whether PATH, a server found in a project, may run.
A kept answer for the file as it is now, else the answer of
`lsp-copilot-confirm-server-function' (not asked when NO-ASK); `run' and
`never' are kept."
  (let* ((print (lsp-copilot--fingerprint path))
         (answers (lsp-copilot--answers))
         (kept (assoc path answers)))
    (cond
     ((null print) nil)
     ((equal (nth 1 kept) print) (eq (nth 2 kept) 'run))
     (no-ask nil)
     (t (let ((answer (funcall lsp-copilot-confirm-server-function path)))
          (when (memq answer '(run never))
            (make-directory (file-name-directory (expand-file-name lsp-copilot-trust-file)) t)
            (with-temp-file lsp-copilot-trust-file
              (let ((print-length nil) (print-level nil))
                (prin1 (cons (list path print answer) (assoc-delete-all path answers))
                       (current-buffer)))))
          (eq answer 'run))))))

(provide 'lsp-copilot-trust)
;;; lsp-copilot-trust.el ends here
