/**
 * The dashboard's errors, each with a stable `code`. Both end as an HTTP answer: the dashboard
 * catches them and renders the page that explains them.
 */

/** A posted form over the dashboard's limit (64 KiB): answered 413, nothing is changed. */
export class BodyTooLargeError extends Error {
  readonly code = 'DASHBOARD_BODY_TOO_LARGE';
}

/** A client error with the page that explains it. */
export class PageError extends Error {
  readonly code = 'DASHBOARD_PAGE';
  constructor(
    readonly status: number,
    readonly title: string,
    message: string,
  ) {
    super(message);
  }
}
