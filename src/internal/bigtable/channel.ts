/**
 * The channel MutateRows travels on (ADR 0010): see `../grpcChannel.ts`; production goes to
 * `bigtable.googleapis.com:443`.
 *
 * @internal
 */
import type * as grpc from "@grpc/grpc-js"
import * as shared from "../grpcChannel.ts"

/** The production Bigtable data endpoint. @internal */
export const dataTarget = "bigtable.googleapis.com:443"

/** @internal */
export type HeaderSource = shared.HeaderSource

/** The production channel: TLS plus call credentials. @internal */
export const productionChannel = (auth: HeaderSource): grpc.Client =>
  shared.productionChannel(dataTarget, auth, "Bigtable")

/** A plaintext channel without credentials to an emulator. @internal */
export const emulatorChannel = shared.emulatorChannel
