// The device plugin's codecs (src/deviceplugin/api.ts: the JSON descriptor with protobufjs's
// light build) against @grpc/proto-loader parsing the .proto text, which it replaced (#43): the
// same bytes for every message of every method both ways, the same objects decoded.
import { readFileSync } from 'node:fs';
import type * as grpc from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
// @ts-expect-error -- a plain .mjs build script, typed by its use here
import { API_FILES, API_JSON, API_PROTO, protoJson } from '../../../scripts/proto-json.mjs';
import { grpcServices } from '../../../src/kubelet/grpc-api.js';
import { devicePluginApi } from '../../../src/deviceplugin/api.js';
import { protoLoaderApi } from '../../helpers/device-plugin-proto.js';

type Method = grpc.MethodDefinition<object, object>;

/** A message of each method's request and response, every kind of field set. */
const SAMPLES: Record<string, { request: object; response: object }> = {
  Register: {
    request: {
      version: 'v1beta1',
      endpoint: 'erdma-smcr.sock',
      resource_name: 'aliyun/erdma',
      options: { pre_start_required: false, get_preferred_allocation_available: true },
    },
    response: {},
  },
  GetDevicePluginOptions: {
    request: {},
    response: { pre_start_required: true, get_preferred_allocation_available: false },
  },
  ListAndWatch: {
    request: {},
    response: {
      devices: [
        { ID: 'erdma_0-0', health: 'Healthy', topology: { nodes: [{ ID: 0 }, { ID: 3 }] } },
        { ID: 'erdma_1-0', health: 'Unhealthy', topology: null },
      ],
    },
  },
  GetPreferredAllocation: {
    request: {
      container_requests: [
        {
          available_deviceIDs: ['erdma_0-0', 'erdma_0-1'],
          must_include_deviceIDs: ['erdma_0-1'],
          allocation_size: 2,
        },
      ],
    },
    response: { container_responses: [{ deviceIDs: ['erdma_0-1', 'erdma_0-0'] }] },
  },
  Allocate: {
    request: { container_requests: [{ devicesIDs: ['erdma_0-0'] }] },
    response: {
      container_responses: [
        {
          envs: { ERDMA_SMCR_DEVICES: 'erdma_0', EMPTY: '' },
          mounts: [{ container_path: '/sys/x', host_path: '/sys/x', read_only: true }],
          devices: [
            {
              container_path: '/dev/infiniband/uverbs0',
              host_path: '/dev/infiniband/uverbs0',
              permissions: 'rw',
            },
          ],
          annotations: { 'smcr.erdma.io/devices': 'erdma_0' },
        },
      ],
    },
  },
  PreStartContainer: { request: { devicesIDs: ['erdma_0-0'] }, response: {} },
};

const services = ['Registration', 'DevicePlugin'] as const;

const methods = services.flatMap((s) =>
  Object.entries(devicePluginApi()[s].service).map(
    ([name, ours]) =>
      [s, name, ours as Method, protoLoaderApi()[s].service[name] as Method] as const,
  ),
);

describe('the device plugin API as the device plugin loads it', () => {
  it('api.json is the descriptor of api.proto (run `node scripts/proto-json.mjs` after changing the .proto)', () => {
    expect(readFileSync(API_JSON as string, 'utf8')).toBe(
      (protoJson as (f: string) => string)(API_PROTO as string),
    );
  });

  it('has every method of both services, with the paths and streaming of proto-loader', () => {
    expect(methods.map(([, name]) => name).sort()).toEqual(Object.keys(SAMPLES).sort());
    for (const [, name, ours, theirs] of methods) {
      expect(ours.path, name).toBe(theirs.path);
      expect([ours.requestStream, ours.responseStream], name).toEqual([
        theirs.requestStream,
        theirs.responseStream,
      ]);
      expect(ours.originalName, name).toBe(theirs.originalName);
    }
  });

  it.each(methods.map(([s, name, ours, theirs]) => [`${s}.${name}`, name, ours, theirs] as const))(
    '%s: the same bytes both ways and the same objects decoded',
    (_label, name, ours, theirs) => {
      const sample = SAMPLES[name];
      if (!sample) throw new Error(`no sample for ${name}`);
      for (const [value, ser, theirSer, de, theirDe] of [
        [
          sample.request,
          ours.requestSerialize,
          theirs.requestSerialize,
          ours.requestDeserialize,
          theirs.requestDeserialize,
        ],
        [
          sample.response,
          ours.responseSerialize,
          theirs.responseSerialize,
          ours.responseDeserialize,
          theirs.responseDeserialize,
        ],
      ] as const) {
        const bytes = ser(value);
        expect(bytes.equals(theirSer(value))).toBe(true);
        const decoded = de(bytes);
        expect(decoded).toEqual(theirDe(bytes));
        // Nothing is lost on the way (unset message fields come back as null, as before).
        expect(ser(decoded).equals(bytes)).toBe(true);
      }
    },
  );

  it('a message whose bytes are not the type fails to decode instead of giving a half object', () => {
    const allocate = devicePluginApi().DevicePlugin.service.Allocate as Method;
    expect(() => allocate.requestDeserialize(Buffer.from([0x0a, 0x05, 0x0a]))).toThrow(
      /index out of range|invalid/,
    );
  });
});

describe("the DRA driver's APIs (proto/dra, proto/pluginregistration)", () => {
  it.each((API_FILES as [string, string][]).map(([proto, json]) => [json, proto]))(
    '%s is the descriptor of %s',
    (json, proto) => {
      expect(readFileSync(json, 'utf8')).toBe((protoJson as (f: string) => string)(proto));
    },
  );

  // The paths the kubelet calls (its generated api_grpc.pb.go names them so, v1.37.2).
  it('serves the method paths the kubelet dials', () => {
    const paths = (dir: string[], pkg: string, name: string): string[] =>
      Object.values(
        (grpcServices(dir, pkg, [name]) as Record<string, grpc.ServiceClientConstructor>)[name]!
          .service,
      ).map((m) => m.path);
    expect(paths(['pluginregistration', 'v1'], 'pluginregistration', 'Registration')).toEqual([
      '/pluginregistration.Registration/GetInfo',
      '/pluginregistration.Registration/NotifyRegistrationStatus',
    ]);
    for (const v of ['v1', 'v1beta1'])
      expect(paths(['dra', v], `k8s.io.kubelet.pkg.apis.dra.${v}`, 'DRAPlugin')).toEqual([
        `/k8s.io.kubelet.pkg.apis.dra.${v}.DRAPlugin/NodePrepareResources`,
        `/k8s.io.kubelet.pkg.apis.dra.${v}.DRAPlugin/NodeUnprepareResources`,
      ]);
  });
});
