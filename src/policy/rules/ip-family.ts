// ip-family: SMC-R carries IPv4 only, and SMC-R pods get IPv6 turned off unless they keep it.
import { SMCR_ANNOTATION } from '../../constants.js';
import { arrayOf, isObject } from '../../util/json.js';
import { annotationPath, deny, none, type Rule } from './rule.js';

function isIPv6(addr: unknown): boolean {
  return typeof addr === 'string' && addr.includes(':');
}

export const ipFamily: Rule = {
  id: 'ip-family',
  scope: 'smcr',
  when: 'the cluster is IPv6-only; or the pod has IPv6 DNS nameservers while IPv6 will be turned off',
  fix: 'IPv4, or `smcr.erdma.io/keep-ipv6: "true"`',
  example: 'examples/invalid/ipv6-dns.yaml',
  check: (ctx) => {
    const out = none();
    const fams = ctx.view.ipFamilies ?? [];
    if (fams.length > 0 && !fams.includes('IPv4')) {
      return deny(
        'ip-family',
        annotationPath(ctx),
        `the cluster is IPv6-only, and SMC-R carries IPv4 only. Remove the ${SMCR_ANNOTATION} annotation.`,
      );
    }
    if (fams.includes('IPv6'))
      out.warnings.push('dual-stack cluster: IPv6 connections of this pod stay on TCP');
    const dns = isObject(ctx.loc.spec.dnsConfig) ? ctx.loc.spec.dnsConfig : {};
    const v6dns = arrayOf(dns.nameservers).filter(isIPv6);
    const v6alias = arrayOf(ctx.loc.spec.hostAliases).filter((a) => isObject(a) && isIPv6(a.ip));
    if (!ctx.tuning.keepIPv6 && v6dns.length > 0) {
      out.denials.push({
        rule: 'ip-family',
        path: `${ctx.loc.prefix}spec.dnsConfig.nameservers`,
        message:
          `the pod uses IPv6 DNS nameservers (${v6dns.join(', ')}), but SMC-R pods get IPv6 turned off, so name ` +
          `resolution would fail. Use IPv4 nameservers, or set smcr.erdma.io/keep-ipv6: "true".`,
      });
    }
    if (!ctx.tuning.keepIPv6 && v6alias.length > 0) {
      out.warnings.push('IPv6 hostAliases are unreachable: SMC-R pods get IPv6 turned off');
    }
    if (ctx.tuning.keepIPv6 && !fams.includes('IPv6')) {
      out.warnings.push('IPv6 stays on in this pod; its IPv6 connections stay on TCP');
    }
    return out;
  },
};
