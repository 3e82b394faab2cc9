/**
 * @lameduck/grpc: lossless online/offline for @grpc/grpc-js servers, on the
 * same engine as attach(). See the package README.
 */
export {}
