// didShow / didAccept / didReject. A suggestion handed to the editor is "shown"; the item's
// command runs when the user accepts it; a shown suggestion that is replaced by another
// one, or dropped, without being accepted is "rejected".
import { DID_ACCEPT, DID_REJECT, DID_SHOW, FeedbackParams } from './protocol';

export type Send = (method: string, params: FeedbackParams) => void;

export class Feedback {
  private pending: FeedbackParams | undefined;

  constructor(private readonly send: Send) {}

  shown(params: FeedbackParams): void {
    if (this.pending && !same(this.pending, params)) {
      this.send(DID_REJECT, this.pending);
    } else if (this.pending) {
      return; // the same suggestion again (re-requested at the same place): shown once
    }
    this.pending = params;
    this.send(DID_SHOW, params);
  }

  accepted(params: FeedbackParams): void {
    this.pending = undefined;
    this.send(DID_ACCEPT, params);
  }

  /** The user moved on (e.g. the request came back empty, or the document closed). */
  dismissed(): void {
    if (this.pending) {
      this.send(DID_REJECT, this.pending);
      this.pending = undefined;
    }
  }

  get current(): FeedbackParams | undefined {
    return this.pending;
  }
}

function same(a: FeedbackParams, b: FeedbackParams): boolean {
  return (
    a.uri === b.uri &&
    a.text === b.text &&
    a.position.line === b.position.line &&
    a.position.character === b.position.character
  );
}
