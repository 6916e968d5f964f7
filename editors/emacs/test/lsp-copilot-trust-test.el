;;; lsp-copilot-trust-test.el --- A project's own server runs only after a yes  -*- lexical-binding: t; -*-

;; emacs --batch -L editors/emacs -l editors/emacs/test/lsp-copilot-trust-test.el \
;;   -f ert-run-tests-batch-and-exit
;; No server: `lsp-copilot--find-command' in a project with a .venv/bin/lsp-copilot of its
;; own, with the question answered by a function of the test's.

;;; Code:

(require 'cl-lib)
(require 'ert)
(require 'lsp-copilot)

(defun lsp-copilot-trust-test--write (file text)
  (make-directory (file-name-directory file) t)
  (with-temp-file file (insert text))
  (set-file-modes file #o755))

(defmacro lsp-copilot-trust-test--with-project (&rest body)
  "Run BODY in a project with its own server `local', none on `exec-path', a
fresh `lsp-copilot-trust-file', and `answers' (a list) as the replies to the
question, whose paths go to `asked'."
  (declare (indent 0))
  `(let* ((root (file-name-as-directory (make-temp-file "lsp-copilot-trust-" t)))
          (local (expand-file-name "project/.venv/bin/lsp-copilot" root))
          (bin (expand-file-name "bin/" root))
          (default-directory (expand-file-name "project/src/" root))
          (exec-path (list bin))
          (lsp-copilot-server-command nil)
          (lsp-copilot-trust-file (expand-file-name "data/trusted.eld" root))
          (answers nil)
          (asked nil)
          (lsp-copilot-confirm-server-function
           (lambda (path) (push path asked) (pop answers))))
     (ignore answers asked)
     (lsp-copilot-trust-test--write local "#!/bin/sh\n")
     (make-directory default-directory t)
     (make-directory bin t)
     (unwind-protect (progn ,@body)
       (delete-directory root t))))

(ert-deftest lsp-copilot-trust-no ()
  "A project server is not run after a no, which is kept."
  (lsp-copilot-trust-test--with-project
    (setq answers '(never))
    (should-not (lsp-copilot--find-command))
    (should (equal asked (list local)))
    (setq asked nil)
    (should-not (lsp-copilot--find-command))
    (should-not asked)))

(ert-deftest lsp-copilot-trust-not-now ()
  "No answer: not run, and asked again next time; without asking, nothing runs."
  (lsp-copilot-trust-test--with-project
    (should-not (lsp-copilot--find-command))
    (should-not (lsp-copilot--find-command))
    (should (= (length asked) 2))
    (should-not (lsp-copilot--find-command t))
    (should (= (length asked) 2))))

(ert-deftest lsp-copilot-trust-yes ()
  "A yes runs it and is remembered, for the file as it is."
  (lsp-copilot-trust-test--with-project
    (setq answers '(run))
    (should (equal (lsp-copilot--find-command) (list local "serve")))
    (should (equal asked (list local)))
    (setq asked nil)
    (should (equal (lsp-copilot--find-command) (list local "serve")))
    (should (equal (lsp-copilot--find-command t) (list local "serve")))
    (should-not asked)
    (should (file-exists-p lsp-copilot-trust-file))
    ;; The file changed since (a pull replaced it): asked again.
    (lsp-copilot-trust-test--write local "#!/bin/sh\necho changed\n")
    (should-not (lsp-copilot--find-command))
    (should (equal asked (list local)))))

(ert-deftest lsp-copilot-trust-path-first ()
  "One on `exec-path' runs unasked; a relative entry does not name the project's."
  (lsp-copilot-trust-test--with-project
    (let ((default-directory (expand-file-name "project/" root))
          (exec-path (list ".venv/bin" bin)))
      (should-not (lsp-copilot--find-command))
      (should (equal asked (list local))))
    (setq asked nil answers '(run))
    (lsp-copilot-trust-test--write (expand-file-name "lsp-copilot" bin) "#!/bin/sh\n")
    (should (equal (lsp-copilot--find-command) (list (expand-file-name "lsp-copilot" bin) "serve")))
    (should-not asked)))

(ert-deftest lsp-copilot-trust-batch-and-dir-locals ()
  "The default question has no answer in batch mode; a project's .dir-locals.el
cannot name the command, the settings or the answers file without Emacs asking."
  (lsp-copilot-trust-test--with-project
    (let ((lsp-copilot-confirm-server-function #'lsp-copilot-confirm-server))
      (should-not (lsp-copilot--find-command))))
  (dolist (var '(lsp-copilot-server-command lsp-copilot-server-settings
                 lsp-copilot-trust-file lsp-copilot-confirm-server-function))
    (should (risky-local-variable-p var))))

;;; lsp-copilot-trust-test.el ends here
