// What the package READMEs' snippets take from the reader's own application: declared here so the
// snippets compile (they are type-checked, never run).
import { Injectable } from '@nestjs/common';

/** The reader's mail service (an inversify class and a Nest provider alike). */
@Injectable()
export class Mailer {
  async send(_to: string, _body: unknown): Promise<void> {}
}

export declare function render(payload: unknown): string;
