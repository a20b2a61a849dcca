/**
 * What to do about an answer waiting will not change, appended to the service's own message where
 * the sinks report it: refused permissions, a Bigtable instance that does not exist.
 *
 * @internal
 */

/** @internal */
export const bigtablePermission =
  "the credentials lack a permission: grant their account roles/bigtable.user on the instance (writes), and " +
  "roles/bigtable.admin where the sink creates tables or column families"

/** @internal */
export const bigqueryPermission =
  "the credentials lack a permission: grant their account roles/bigquery.dataEditor on the dataset (writes, and " +
  "table creation and schema updates)"

/** What to do about a `NOT_FOUND` answer to `CreateTable` under `instanceName`. @internal */
export const bigtableInstanceMissing = (instanceName: string): string => {
  const instance = instanceName.slice(instanceName.lastIndexOf("/") + 1)
  return `the instance ${instanceName} does not exist (or these credentials cannot see it): create it with ` +
    `\`gcloud bigtable instances create ${instance}\` or the console, or fix TableDestination's instanceId`
}

/** `message` followed by `advice`, once. @internal */
export const append = (message: string, advice: string): string =>
  message.includes(advice) ? message : `${message} (${advice})`
