// A run graph node on the canvas: the card, with the handles React Flow hangs edges on (hidden:
// the edges are drawn along ELK's routes, not between handles).

import { Handle, Position, type Node, type NodeProps } from '@xyflow/react';
import { NodeCard } from './NodeCard.tsx';
import type { NodeCardData } from './node-card.ts';

export type RunFlowNode = Node<NodeCardData, 'run'>;

const HIDDEN_HANDLE = '!h-px !min-h-0 !w-px !min-w-0 !border-0 !bg-transparent';

export function FlowNode({ data, selected }: NodeProps<RunFlowNode>) {
  return (
    <>
      <Handle type="target" position={Position.Left} isConnectable={false} className={HIDDEN_HANDLE} />
      <NodeCard data={data} selected={selected} />
      <Handle type="source" position={Position.Right} isConnectable={false} className={HIDDEN_HANDLE} />
    </>
  );
}
