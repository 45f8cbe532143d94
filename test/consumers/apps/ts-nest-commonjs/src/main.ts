import * as express from 'express'
import { receiveSignedEvent } from './receive'

receiveSignedEvent(express()).then(console.log)
