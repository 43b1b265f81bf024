import { Inject } from '@nestjs/common';
import { Loom } from '@loom/core';

/**
 * Injects the application's {@link Loom} engine: `constructor(@InjectLoom() private readonly loom: Loom)`.
 * The `Loom` class is the token, so `@Inject(Loom)`, a plain `Loom`-typed constructor parameter
 * and `app.get(Loom)` give the same engine.
 */
export function InjectLoom(): PropertyDecorator & ParameterDecorator {
  return Inject(Loom);
}
