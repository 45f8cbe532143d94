// The help texts of `payhooks`, rendered from the command specs. Pure: run.ts decides where they go.
import { type CommandSpec, commonOptions, connectionOptions, type OptionSpec } from './spec.js'

function optionLines(options: Record<string, OptionSpec>): string[] {
  const entries = Object.entries(options).map(([name, spec]) => {
    const flag = `${spec.short ? `-${spec.short}, ` : ''}--${name}${spec.arg ? ` ${spec.arg}` : ''}`
    const extra = [
      spec.default !== undefined && spec.type === 'string' ? `default ${spec.default}` : '',
      spec.env ? `env ${spec.env}` : '',
    ].filter(Boolean)
    return [flag, `${spec.help}${extra.length > 0 ? ` [${extra.join(', ')}]` : ''}`] as const
  })
  const width = Math.max(...entries.map(([flag]) => flag.length)) + 2
  return entries.map(([flag, help]) => `  ${flag.padEnd(width)}${help}`)
}

/** `payhooks <command> --help`. */
export function commandHelp(command: CommandSpec): string {
  const name = command.name.join(' ')
  const lines = [`payhooks ${name}: ${command.summary}`, '', `Usage: payhooks ${name} ${command.usage}`]
  if (command.details) lines.push('', ...command.details)
  if (Object.keys(command.options).length > 0) lines.push('', 'Options:', ...optionLines(command.options))
  if (command.service)
    lines.push('', 'Connection (flag, else environment variable):', ...optionLines(connectionOptions))
  lines.push('', 'Common:', ...optionLines(commonOptions))
  lines.push('', 'Examples:', ...command.examples.map((example) => `  ${example}`))
  return `${lines.join('\n')}\n`
}

function summaryLines(list: CommandSpec[]): string[] {
  const entries = list.map((c) => [`${c.name.join(' ')} ${c.usage.replace(/ ?\[options\]$/, '')}`.trim(), c.summary])
  return entries.flatMap(([usage, summary]) =>
    (usage as string).length > 44
      ? [`  ${usage}`, `  ${''.padEnd(46)}${summary}`]
      : [`  ${(usage as string).padEnd(46)}${summary}`],
  )
}

/** `payhooks <group> --help`: the commands of `group` among `commands`. */
export function groupHelp(group: string, commands: CommandSpec[]): string {
  const list = commands.filter((c) => c.name[0] === group)
  return `${[
    `Usage: payhooks ${group} <command> [options]`,
    '',
    ...summaryLines(list),
    '',
    `Run 'payhooks ${group} <command> --help' for its options.`,
  ].join('\n')}\n`
}

/** `payhooks --help`: service commands and local commands (no service needed), then the shared options. */
export function mainHelp(service: CommandSpec[], local: CommandSpec[]): string {
  return `${[
    'payhooks: the payment service webhooks from the command line',
    '',
    'Usage: payhooks <command> [options]',
    '',
    'Service commands (need --base-url and credentials, or PAYHOOKS_* variables):',
    ...summaryLines(service),
    '',
    'Local commands (no service needed):',
    ...summaryLines(local),
    '',
    'Connection (flag, else environment variable):',
    ...optionLines(connectionOptions),
    '',
    'Common:',
    ...optionLines(commonOptions),
    '',
    'Exit codes: 0 success, 1 the service or receiver said no (or could not be reached), 2 bad usage',
    '(prove: 1 a check failed, 2 also when the receiver cannot be reached at all).',
    "Run 'payhooks <command> --help' for a command's options.",
  ].join('\n')}\n`
}
