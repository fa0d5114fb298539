/**
 * What a feature adds to the engine (`Engine.ts` lists them, each after the features it builds on): its services,
 * built on the store's ports and on the services of the features before it, and its background jobs, started once
 * every feature's services are built and stopped before any of them is closed.
 */
import { Layer } from "effect"

export interface Feature<Services, E, Needs, BackgroundNeeds> {
  readonly services: Layer.Layer<Services, E, Needs>
  readonly background: Layer.Layer<never, never, BackgroundNeeds>
}

/** A feature with these services and no background job. */
export const servicesOnly = <A, E, R>(services: Layer.Layer<A, E, R>): Feature<A, E, R, never> => ({
  services,
  background: Layer.empty
})

/**
 * The feature `add` built on `below`: its services given everything below provides (and provided along with it),
 * its background jobs beside those below.
 */
export const addFeature = <A, E, R, B>(add: Feature<A, E, R, B>) =>
<A0, E0, R0, B0>(below: Feature<A0, E0, R0, B0>): Feature<A | A0, E | E0, R0 | Exclude<R, A0>, B | B0> => ({
  services: add.services.pipe(Layer.provideMerge(below.services)),
  background: Layer.merge(below.background, add.background)
})

/** The fields of `o` that are given (a setting left undefined keeps its default). */
export const givenOf = <A extends object>(o: { readonly [K in keyof A]?: A[K] | undefined }): Partial<A> =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<A>
