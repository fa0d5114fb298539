/** The part of autocannon@8's programmatic API that `load.ts` uses (the package ships no types). */
declare module "autocannon" {
  import type { EventEmitter } from "node:events"

  export interface Request {
    readonly method?: string
    readonly path?: string
    readonly headers?: Record<string, string>
    readonly body?: string
  }

  export interface Client extends EventEmitter {
    setRequests(requests: ReadonlyArray<Request>): void
  }

  export interface Options {
    readonly url: string
    readonly connections?: number
    readonly duration?: number
    readonly timeout?: number
    readonly method?: string
    readonly headers?: Record<string, string>
    readonly body?: string
    readonly requests?: ReadonlyArray<Request>
    readonly setupClient?: (client: Client) => void
  }

  export interface Result {
    readonly duration: number
    readonly errors: number
    readonly timeouts: number
    readonly non2xx: number
    readonly statusCodeStats: Record<string, { readonly count: number }>
  }

  export interface Instance extends EventEmitter, PromiseLike<Result> {
    stop(): void
  }

  function autocannon(options: Options): Instance
  export default autocannon
}
