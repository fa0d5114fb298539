/**
 * The licensing engine on a fresh memory store, for service tests: every domain service, the store's ports
 * (so tests can read events back) and a deterministic `Random`. Time is whatever Clock the test runs under
 * (`it.effect` provides `TestClock`).
 */
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { Engine, Random } from "@lm/domain"
import { MemoryStore } from "@lm/storage-memory"
import { seededRandom, T0 } from "./fixtures.js"

/** Every service on a new, empty memory store with the given random source (seeded by default). */
export const engine = (random: Layer.Layer<Random> = seededRandom(1)) =>
  // The event log flushes hourly here, so that moving the TestClock by days does not spin the flush loop.
  Engine.services({ activity: { flushEveryMillis: 3_600_000 } }).pipe(
    Layer.provideMerge(MemoryStore.layer),
    Layer.provide(random),
    Layer.fresh
  )

/** Runs a test body on a fresh engine, the TestClock set to T0 before the engine starts. */
export const onEngine = <A, E, R>(body: Effect.Effect<A, E, R>, random?: Layer.Layer<Random>) =>
  TestClock.setTime(T0).pipe(Effect.andThen(Effect.provide(body, engine(random))))
